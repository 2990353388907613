import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MATCH_THRESHOLD, nameKey, nameSimilarity } from './match.js';

/**
 * Sanctions list in the format of the US Treasury OFAC "SDN" list as published at
 * https://sanctionslistservice.ofac.treas.gov (files `sdn.csv` and, optionally, `alt.csv`):
 * CSV without a header, fields in double quotes, `-0-` for empty.
 *   sdn.csv: ent_num, SDN_Name ("LAST, First"), SDN_Type (individual / -0- for entities /
 *            vessel / aircraft), Program, Title, Call_Sign, Vess_type, Tonnage, GRT, Vess_flag,
 *            Vess_owner, Remarks
 *   alt.csv: ent_num, alt_num, alt_type (aka / fka / nka), alt_name, alt_remarks
 * SANCTIONS_LIST_FILE takes one path or several separated by commas (sdn.csv,alt.csv); the
 * two layouts are told apart by their number of fields. Vessels and aircraft are skipped.
 * Without SANCTIONS_LIST_FILE the small fictional sample beside this file is used.
 */
export interface SanctionsEntry {
  id: string;
  name: string;
  key: string;
  type: string;
  program: string;
}

export interface SanctionsHit {
  list_id: string;
  listed_name: string;
  program: string;
  score: number;
}

export const SAMPLE_LIST_FILE = join(dirname(fileURLToPath(import.meta.url)), 'sample-sdn.csv');

/** Parses CSV text (RFC 4180 quoting) into rows of fields. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      if (row.some((f) => f.trim() !== '')) rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  row.push(field);
  if (row.some((f) => f.trim() !== '')) rows.push(row);
  return rows;
}

const empty = (v: string | undefined) => (v === undefined || v.trim() === '-0-' ? '' : v.trim());

export function parseSdnCsv(text: string): SanctionsEntry[] {
  const entries: SanctionsEntry[] = [];
  const programs = new Map<string, { type: string; program: string }>();
  const aliases: string[][] = [];
  for (const row of parseCsv(text)) {
    if (row.length >= 12) {
      const type = empty(row[2]).toLowerCase() || 'entity';
      if (type === 'vessel' || type === 'aircraft') continue;
      const info = { type, program: empty(row[3]) };
      programs.set(row[0]!.trim(), info);
      entries.push({ id: row[0]!.trim(), name: empty(row[1]), key: nameKey(empty(row[1])), ...info });
    } else if (row.length >= 4 && row.length <= 6) {
      aliases.push(row);
    }
  }
  for (const row of aliases) {
    const name = empty(row[3]);
    if (!name) continue;
    const info = programs.get(row[0]!.trim()) ?? { type: 'unknown', program: '' };
    entries.push({ id: row[0]!.trim(), name, key: nameKey(name), ...info });
  }
  return entries.filter((e) => e.key !== '');
}

/** A loaded list. Loading reads the files once; screening is CPU only. */
export class SanctionsList {
  constructor(
    readonly entries: SanctionsEntry[],
    readonly threshold = MATCH_THRESHOLD,
  ) {}

  static fromFiles(paths: string[], threshold = MATCH_THRESHOLD): SanctionsList {
    // Files are concatenated before parsing so aliases in alt.csv find their sdn.csv entries.
    const text = paths.map((p) => readFileSync(p, 'utf8')).join('\n');
    return new SanctionsList(parseSdnCsv(text), threshold);
  }

  /** Listed names similar to `name` at or above the threshold, best first. */
  screen(name: string): SanctionsHit[] {
    if (nameKey(name) === '') return [];
    const hits = new Map<string, SanctionsHit>();
    for (const e of this.entries) {
      const score = nameSimilarity(name, e.key);
      if (score < this.threshold) continue;
      const prev = hits.get(e.id);
      if (!prev || prev.score < score) {
        hits.set(e.id, { list_id: e.id, listed_name: e.name, program: e.program, score: Math.round(score * 1000) / 1000 });
      }
    }
    return [...hits.values()].sort((a, b) => b.score - a.score);
  }
}

const loaded = new Map<string, SanctionsList>();

/** The list named by configuration, read once per process (files are immutable while we run). */
export function sanctionsList(fileSetting: string | undefined, threshold = MATCH_THRESHOLD): SanctionsList {
  const paths = (fileSetting ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const files = paths.length > 0 ? paths : [SAMPLE_LIST_FILE];
  const cacheKey = `${files.join(',')}@${threshold}`;
  let list = loaded.get(cacheKey);
  if (!list) {
    list = SanctionsList.fromFiles(files, threshold);
    loaded.set(cacheKey, list);
  }
  return list;
}
