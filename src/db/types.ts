/**
 * The Kysely database type. Each module adds its own tables to this interface from its repo.ts
 * (declaration merging), so a module's tables are declared next to the only code that touches them:
 *
 *   declare module '../../db/types.js' { interface Database { customers: CustomersTable } }
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Database {}
