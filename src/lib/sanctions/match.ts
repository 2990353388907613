/**
 * Fuzzy name matching for sanctions screening, written here (no dependency).
 *
 * Method: normalise both names (Unicode NFKD, diacritics removed, lower case, punctuation to
 * spaces), sort the tokens (so "DOE, John" and "John Doe" compare equal) and compare the joined
 * strings with Jaro-Winkler similarity (0..1). A name also matches when the customer's name
 * without its middle names (first + last token) reaches the threshold, because lists often omit
 * middle names.
 *
 * Threshold: MATCH_THRESHOLD = 0.92 by default (SANCTIONS_MATCH_THRESHOLD). At 0.92, one typo or
 * transliteration difference in a two-token name still matches ("Mohammed" / "Muhammad" pairs
 * with the same surname score about 0.93-0.95), while different people who share a surname stay
 * below it. A token-subset score (tokenSubsetSimilarity) covers middle names present on one side
 * only. A match only sends the case to manual review: false positives cost an operator a
 * look, false negatives cost much more, so the threshold leans to matching.
 */
export const MATCH_THRESHOLD = 0.92;

export function normalizeName(name: string): string[] {
  return name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .split(' ')
    .filter(Boolean);
}

/** Token-sorted, space-joined form of a name: the key that similarity is computed on. */
export function nameKey(name: string): string {
  return normalizeName(name).sort().join(' ');
}

export function jaro(a: string, b: string): number {
  if (a === b) return 1;
  if (a.length === 0 || b.length === 0) return 0;
  const window = Math.max(0, Math.floor(Math.max(a.length, b.length) / 2) - 1);
  const aMatched = new Array<boolean>(a.length).fill(false);
  const bMatched = new Array<boolean>(b.length).fill(false);
  let matches = 0;
  for (let i = 0; i < a.length; i++) {
    const lo = Math.max(0, i - window);
    const hi = Math.min(b.length - 1, i + window);
    for (let j = lo; j <= hi; j++) {
      if (bMatched[j] || a[i] !== b[j]) continue;
      aMatched[i] = bMatched[j] = true;
      matches++;
      break;
    }
  }
  if (matches === 0) return 0;
  let transpositions = 0;
  let k = 0;
  for (let i = 0; i < a.length; i++) {
    if (!aMatched[i]) continue;
    while (!bMatched[k]) k++;
    if (a[i] !== b[k]) transpositions++;
    k++;
  }
  const m = matches;
  return (m / a.length + m / b.length + (m - transpositions / 2) / m) / 3;
}

/** Jaro-Winkler: Jaro boosted by a common prefix of up to four characters (scaling 0.1). */
export function jaroWinkler(a: string, b: string): number {
  const j = jaro(a, b);
  let prefix = 0;
  while (prefix < 4 && prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  return j + prefix * 0.1 * (1 - j);
}

/** Keys to compare for a customer's name: the full name, and first + last without middle names. */
export function candidateKeys(name: string): string[] {
  const tokens = normalizeName(name);
  const keys = new Set([tokens.slice().sort().join(' ')]);
  if (tokens.length > 2) keys.add([tokens[0]!, tokens[tokens.length - 1]!].sort().join(' '));
  return [...keys].filter(Boolean);
}

/**
 * Token-subset score: every token of the shorter name (at least two tokens) paired with its most
 * similar unused token of the longer one, averaged. Catches a middle name present on one side only
 * ("Dmytro Kovalenko" against "KOVALENKO, Dmytro Ivanovych").
 */
export function tokenSubsetSimilarity(a: string[], b: string[]): number {
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  if (short.length < 2) return 0;
  const used = new Set<number>();
  let total = 0;
  for (const token of short) {
    let best = 0;
    let bestIndex = -1;
    long.forEach((other, i) => {
      if (used.has(i)) return;
      const score = jaroWinkler(token, other);
      if (score > best) [best, bestIndex] = [score, i];
    });
    if (bestIndex >= 0) used.add(bestIndex);
    total += best;
  }
  return total / short.length;
}

/** Best similarity between a customer name and one listed name key (already normalised). */
export function nameSimilarity(name: string, listedKey: string): number {
  let best = 0;
  for (const key of candidateKeys(name)) best = Math.max(best, jaroWinkler(key, listedKey));
  if (best < 1) best = Math.max(best, tokenSubsetSimilarity(normalizeName(name), listedKey.split(' ')));
  return best;
}
