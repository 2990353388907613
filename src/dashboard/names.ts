import { html, type Html } from './html.js';
import { detailPath, idLink, type DetailKind } from './layout.js';

/** A name that links to its object's page, its id kept in the title (and the id itself when there is no name). */
export function named(kind: DetailKind, id: string | null | undefined, name: string | null | undefined): Html | null {
  if (!id) return null;
  return name ? html`<a href="${detailPath(kind, id)}" title="${id}">${name}</a>` : idLink(kind, id);
}

/**
 * One side of a money movement as a person reads it: the account's label, then whose it is (the
 * customer's name, or the business's own account). Both link to their pages.
 */
export function party(
  kind: DetailKind | null,
  id: string | null | undefined,
  label: string | null | undefined,
  owner: { id: string | null | undefined; name: string | null | undefined },
): Html | null {
  if (!id) return null;
  const object = kind ? named(kind, id, label) : html`<span title="${id}">${label ?? id}</span>`;
  const who = owner.id ? named('customer', owner.id, owner.name ?? 'Customer') : html`your business`;
  return html`${object} <small class="owner">· ${who}</small>`;
}
