import { html, type Html } from './html.js';

/**
 * The header's search: a plain GET form, so it works without JavaScript and its results can be
 * bookmarked. Its label names no field ("Email", "Request id"): a page's own fields keep their
 * labels to themselves.
 */
export function searchForm(id = 'search-q', value = ''): Html {
  return html`<form method="get" action="/dashboard/search" class="search" role="search">
  <label for="${id}" class="sr-only">Search the dashboard</label>
  <input id="${id}" name="q" type="search" value="${value}" placeholder="Id, email or reference" maxlength="200" autocomplete="off">
  <button type="submit">Search</button>
</form>`;
}
