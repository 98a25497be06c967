import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { Config } from '../config.js';
import { ADMINISTRATORS_GROUP, PERMISSION_CATALOGUE, SEEDED_ROLES, TENANT_ADMINISTRATOR_ROLE } from './catalogue.js';
import { stableId } from './stable-id.js';
import { scopeColumns } from './scopes.js';

// Any constant works; it only has to be the same in every process of one installation.
const BOOTSTRAP_LOCK_KEY = 7_041_913;

export interface Tenant { id: string; name: string }

/**
 * Brings the catalogue and the seeded roles up to date and, on the very first start, creates the
 * tenant, the bootstrap administrator and the Administrators group with its TENANT assignment.
 * Runs in one transaction under an advisory lock, so concurrent starts see one bootstrap.
 */
export async function bootstrap(db: Database, settings: Config['bootstrap']): Promise<Tenant> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK_KEY})`.execute(trx);

    for (const p of PERMISSION_CATALOGUE) {
      await trx
        .insertInto('permissions')
        .values({ id: p.id, name: p.name, description: p.description, permission_type: p.permissionType, category: p.category, source: p.source })
        .onConflict((oc) => oc.column('name').doUpdateSet({ description: p.description, permission_type: p.permissionType, category: p.category, source: p.source }))
        .execute();
    }
    const permissionIds = new Map(PERMISSION_CATALOGUE.map((p) => [p.name, p.id]));
    for (const role of SEEDED_ROLES) {
      await trx
        .insertInto('roles')
        .values({ id: role.id, name: role.name, description: role.description, role_type: role.roleType, readonly: true })
        .onConflict((oc) => oc.column('id').doUpdateSet({ description: role.description, role_type: role.roleType, readonly: true }))
        .execute();
      await trx.deleteFrom('role_permissions').where('role_id', '=', role.id).execute();
      await trx
        .insertInto('role_permissions')
        .values(role.permissions.map((name) => ({ role_id: role.id, permission_id: permissionIds.get(name)! })))
        .execute();
    }

    const existing = await trx.selectFrom('tenant').select(['id', 'name']).executeTakeFirst();
    if (existing) {
      if (settings.tenantId && settings.tenantId !== existing.id) {
        throw new Error(`Invalid configuration: TENANT_ID ${settings.tenantId} differs from the stored tenant ${existing.id}`);
      }
      if (existing.name !== settings.tenantName) {
        await trx.updateTable('tenant').set({ name: settings.tenantName }).where('id', '=', existing.id).execute();
      }
      return { id: existing.id, name: settings.tenantName };
    }

    const tenant = { id: settings.tenantId ?? randomUUID(), name: settings.tenantName };
    await trx.insertInto('tenant').values(tenant).execute();
    const adminId = stableId('user', settings.adminEmail);
    const [localPart = 'admin'] = settings.adminEmail.split('@');
    await trx
      .insertInto('users')
      .values({ id: adminId, email: settings.adminEmail, first_name: capitalise(localPart), last_name: 'Administrator', phone: null, title: 'OTHER' })
      .onConflict((oc) => oc.expression(sql`lower(email)`).doNothing())
      .execute();
    const admin = await trx.selectFrom('users').select('id').where(sql`lower(email)`, '=', settings.adminEmail).executeTakeFirstOrThrow();
    await trx
      .insertInto('groups')
      .values({ ...ADMINISTRATORS_GROUP, contact_user_id: admin.id })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    await trx.insertInto('group_members').values({ group_id: ADMINISTRATORS_GROUP.id, user_id: admin.id }).onConflict((oc) => oc.doNothing()).execute();
    await trx
      .insertInto('assignments')
      .values({ id: randomUUID(), group_id: ADMINISTRATORS_GROUP.id, role_id: TENANT_ADMINISTRATOR_ROLE.id, ...scopeColumns('TENANT', tenant.id) })
      .onConflict((oc) => oc.doNothing())
      .execute();
    return tenant;
  });
}

const capitalise = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);
