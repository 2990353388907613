import type { Config } from '../../config.js';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { sanctionsList, type SanctionsList } from '../../lib/sanctions/list.js';
import { nameKey, nameSimilarity } from '../../lib/sanctions/match.js';
import type { KycDecision } from '../../rails/kyc.js';
import { associatedPersons, customersWithSameIdentity } from '../customers/service.js';
import type { CustomerRow } from '../customers/service.js';
import * as repo from './repo.js';

/**
 * Our own compliance checks, run on every KYC submission and again on every customer change:
 *  - age of majority (KYC_MIN_AGE, per-country exceptions in KYC_MIN_AGE_BY_COUNTRY) → rejected (FINAL)
 *  - supported country of residence (KYC_SUPPORTED_COUNTRIES) → rejected (RETRY: an address can change)
 *  - duplicate identity in the business (same name + date of birth, or same ID document) → manual review
 *  - sanctions screening of every name (SANCTIONS_LIST_FILE, fuzzy match) → manual review
 *  - documents whose printed name or date of birth differ from the customer's → manual review
 * A hit is never approved silently: it is a rejection or waits for a person.
 */
export interface KycPolicy {
  minAge: number;
  minAgeByCountry: Map<string, number>;
  supportedCountries: Set<string>;
  sanctions: () => SanctionsList;
}

export function policyFrom(config: Config): KycPolicy {
  const byCountry = new Map<string, number>();
  for (const pair of config.KYC_MIN_AGE_BY_COUNTRY) {
    const [country, age] = pair.split(':');
    if (country && age && /^\d+$/.test(age)) byCountry.set(country.trim().toUpperCase(), Number(age));
  }
  return {
    minAge: config.KYC_MIN_AGE,
    minAgeByCountry: byCountry,
    supportedCountries: new Set(config.KYC_SUPPORTED_COUNTRIES.map((c) => c.toUpperCase())),
    sanctions: () => sanctionsList(config.SANCTIONS_LIST_FILE, config.SANCTIONS_MATCH_THRESHOLD),
  };
}

/** Whole years between a birth date and today (UTC), birthdays counted on the day. */
export function ageOn(dateOfBirth: string, today = new Date()): number {
  const [y, m, d] = dateOfBirth.split('-').map(Number) as [number, number, number];
  let age = today.getUTCFullYear() - y;
  const beforeBirthday = today.getUTCMonth() + 1 < m || (today.getUTCMonth() + 1 === m && today.getUTCDate() < d);
  if (beforeBirthday) age--;
  return age;
}

interface PersonLike {
  first_name: string | null;
  middle_name: string | null;
  last_name: string | null;
  date_of_birth: string | null;
}

const fullName = (p: PersonLike) => [p.first_name, p.middle_name, p.last_name].filter(Boolean).join(' ');

function personChecks(policy: KycPolicy, subject: string, p: PersonLike, country: string): repo.ComplianceCheck[] {
  const checks: repo.ComplianceCheck[] = [];
  if (p.date_of_birth) {
    const min = policy.minAgeByCountry.get(country) ?? policy.minAge;
    const age = ageOn(p.date_of_birth);
    checks.push({ check: 'age', subject, result: age >= min ? 'pass' : 'fail', detail: { minimum: min } });
  }
  checks.push(sanctionsCheck(policy, subject, fullName(p)));
  return checks;
}

function sanctionsCheck(policy: KycPolicy, subject: string, name: string): repo.ComplianceCheck {
  const hits = policy.sanctions().screen(name).slice(0, 5);
  return { check: 'sanctions', subject, result: hits.length > 0 ? 'hit' : 'pass', ...(hits.length ? { detail: hits } : {}) };
}

async function duplicateCheck(db: Queryable, ctx: Scope, c: CustomerRow): Promise<repo.ComplianceCheck> {
  const others = new Set<string>();
  if (c.first_name && c.last_name && c.date_of_birth) {
    const same = await customersWithSameIdentity(
      db,
      ctx,
      { firstName: c.first_name, lastName: c.last_name, dateOfBirth: c.date_of_birth },
      c.id,
    );
    same.forEach((id) => others.add(id));
  }
  for (const doc of await repo.documentTypesOf(db, ctx, c.id)) {
    if (!doc.number) continue;
    const holders = await repo.customersWithDocumentNumber(
      db,
      ctx,
      { doc_type: doc.doc_type, number: doc.number, country: doc.country },
      c.id,
    );
    holders.forEach((id) => others.add(id));
  }
  return {
    check: 'duplicate',
    subject: 'customer',
    result: others.size > 0 ? 'hit' : 'pass',
    ...(others.size ? { detail: [...others] } : {}),
  };
}

/** Name (fuzzy, same threshold as screening) and date of birth on each document against the customer. */
async function documentCheck(db: Queryable, ctx: Scope, policy: KycPolicy, c: CustomerRow): Promise<repo.ComplianceCheck> {
  const customerKey = nameKey([c.first_name, c.last_name].filter(Boolean).join(' '));
  const mismatches: { document_id: string; field: string }[] = [];
  for (const d of await repo.documentIdentities(db, ctx, c.id)) {
    if (d.dob && c.date_of_birth && d.dob !== c.date_of_birth) mismatches.push({ document_id: d.id, field: 'dob' });
    const printed = [d.first_name, d.last_name].filter(Boolean).join(' ');
    if (d.first_name && d.last_name && nameSimilarity(printed, customerKey) < policy.sanctions().threshold) {
      mismatches.push({ document_id: d.id, field: 'name' });
    }
  }
  return {
    check: 'document',
    subject: 'customer',
    result: mismatches.length ? 'hit' : 'pass',
    ...(mismatches.length ? { detail: mismatches } : {}),
  };
}

export interface ComplianceResult {
  checks: repo.ComplianceCheck[];
  /** Per associated person: the checks that concern them. */
  persons: { personId: string; checks: repo.ComplianceCheck[] }[];
}

export async function runComplianceChecks(db: Queryable, ctx: Scope, policy: KycPolicy, c: CustomerRow): Promise<ComplianceResult> {
  const country = c.address.country;
  const checks: repo.ComplianceCheck[] = [
    { check: 'country', subject: 'customer', result: policy.supportedCountries.has(country) ? 'pass' : 'fail', detail: { country } },
  ];
  const persons: ComplianceResult['persons'] = [];
  if (c.type === 'individual') {
    checks.push(...personChecks(policy, 'customer', c, country), await duplicateCheck(db, ctx, c), await documentCheck(db, ctx, policy, c));
  } else {
    checks.push(sanctionsCheck(policy, 'customer', c.business_name ?? ''));
    for (const p of await associatedPersons(db, c.id)) {
      const own = personChecks(policy, `associated_person:${p.id}`, p, p.address.country);
      persons.push({ personId: p.id, checks: own });
      checks.push(...own);
    }
  }
  return { checks, persons };
}

/** What the checks alone decide; undefined when they leave the decision to the connector. */
export function decisionFromChecks(checks: repo.ComplianceCheck[]): KycDecision | undefined {
  const failed = checks.filter((c) => c.result === 'fail');
  if (failed.some((c) => c.check === 'age')) {
    return { outcome: 'rejected', labels: ['AGE_REQUIREMENT_MISMATCH'], rejectType: 'FINAL' };
  }
  if (failed.some((c) => c.check === 'country')) {
    return { outcome: 'rejected', labels: ['UNSUPPORTED_COUNTRY'], rejectType: 'RETRY' };
  }
  if (checks.some((c) => c.result === 'hit')) return { outcome: 'manual_review', reason: 'manual_review' };
  return undefined;
}

/** Combines decisions: any rejection wins, then manual review, else approval. */
export function combineDecisions(decisions: (KycDecision | undefined)[]): KycDecision {
  const given = decisions.filter((d): d is KycDecision => d !== undefined);
  const rejected = given.filter((d) => d.outcome === 'rejected');
  if (rejected.length > 0) {
    return {
      outcome: 'rejected',
      labels: [...new Set(rejected.flatMap((d) => d.labels))],
      rejectType: rejected.some((d) => d.rejectType === 'FINAL') ? 'FINAL' : 'RETRY',
    };
  }
  if (given.some((d) => d.outcome === 'manual_review')) return { outcome: 'manual_review', reason: 'manual_review' };
  return { outcome: 'approved' };
}
