import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { validatorCompiler as zodValidatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';

type Issue = z.core.$ZodIssue;

/** The same shape fastify-type-provider-zod gives a Zod issue (what http/envelope.ts reads). */
function asValidationError(issue: Issue) {
  const { path, code, message, ...params } = issue;
  return { keyword: code, instancePath: `/${path.join('/')}`, schemaPath: `#/${path.join('/')}/${code}`, message, params };
}

function discriminatedUnion(schema: unknown): z.ZodDiscriminatedUnion | undefined {
  return schema instanceof z.ZodDiscriminatedUnion ? schema : undefined;
}

/**
 * The issues of the branch that fits `data` best when its discriminator is missing or unknown:
 * Zod stops at the discriminator, so a client that left out `type` would learn only that, fix it,
 * and then meet every other invalid field; the contract lists every invalid field at once.
 */
function branchIssues(union: z.ZodDiscriminatedUnion, data: unknown): Issue[] {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return [];
  const key = union._zod.def.discriminator;
  let best: Issue[] | undefined;
  for (const option of union.options) {
    const literal = (option as z.ZodObject).shape?.[key];
    if (!(literal instanceof z.ZodLiteral)) return [];
    const result = z.safeParse(option, { ...(data as Record<string, unknown>), [key]: literal.value });
    const issues = result.success ? [] : result.error.issues.filter((i: Issue) => i.path[0] !== key);
    if (!best || issues.length < best.length) best = issues;
  }
  return best ?? [];
}

/** Whether `data` names one of the union's branches (then Zod already checked that branch whole). */
function hasKnownDiscriminator(union: z.ZodDiscriminatedUnion, data: unknown): boolean {
  if (typeof data !== 'object' || data === null) return false;
  const value = (data as Record<string, unknown>)[union._zod.def.discriminator];
  return union.options.some((option) => {
    const literal = (option as z.ZodObject).shape?.[union._zod.def.discriminator];
    return literal instanceof z.ZodLiteral && literal.values.has(value as never);
  });
}

/**
 * Zod validation (fastify-type-provider-zod's compiler), plus, for a body that is a discriminated
 * union sent without a valid discriminator, the other invalid fields of its closest branch.
 */
export const validatorCompiler: FastifySchemaCompiler<z.ZodType> = (route) => {
  const validate = zodValidatorCompiler(route);
  const union = discriminatedUnion(route.schema);
  if (!union) return validate;
  const check = validate as (data: unknown) => { error?: FastifySchemaValidationError[] | Error; value?: unknown };
  return (data: unknown) => {
    const result = check(data);
    if (!Array.isArray(result.error)) return result;
    if (hasKnownDiscriminator(union, data)) return result;
    const extra = branchIssues(union, data).map(asValidationError) as unknown as FastifySchemaValidationError[];
    return { error: [...result.error, ...extra] };
  };
};
