import { html, type Html } from './html.js';

/** The header's search: a plain GET form, so it works without JavaScript and its results can be bookmarked. */
export function searchForm(id = 'search-q', value = ''): Html {
  return html`<form method="get" action="/dashboard/search" class="search" role="search">
  <label for="${id}" class="sr-only">Search by id, email or reference</label>
  <input id="${id}" name="q" type="search" value="${value}" placeholder="Id, email or reference" maxlength="200" autocomplete="off">
  <button type="submit">Search</button>
</form>`;
}
