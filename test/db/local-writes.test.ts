import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LocalWrites, mayWrite } from '../../src/db/local-writes.js';

describe('LocalWrites: what counts as a completed write', () => {
  test('plain reads do not count; writes, writing CTEs and state-changing functions do', () => {
    for (const read of [
      'select 1', '  SELECT * from users where id = $1', 'with x as (select 1) select * from x', 'show search_path', 'explain select 1',
      'select id from jobs where state = $1 for update skip locked', 'select * from t for no key update', 'select * from t for share',
    ]) {
      assert.equal(mayWrite(read), false, read);
    }
    for (const write of [
      'insert into users values ($1)', 'UPDATE assignments set role_id = $1', 'delete from group_members', 'merge into t using s on true when matched then delete',
      'with gone as (delete from assignments returning *) select * from gone', 'select nextval(\'x\')', 'select set_config(\'a\', \'b\', false)',
      'with picked as (select id from jobs for update skip locked) update jobs set state = $1 where id in (select id from picked)', 'truncate users', 'create table x (a int)', 'set local statement_timeout = 10', 'lock table users',
    ]) {
      assert.equal(mayWrite(write), true, write);
    }
  });

  test('outside a transaction a write counts when done; inside one, at its end, once, and only if it wrote', () => {
    const writes = new LocalWrites();
    const track = writes.connectionTracker();
    const at = () => writes.completed;
    const start = at();
    track('select 1');
    assert.equal(at(), start);
    track('update users set active = false');
    assert.equal(at(), start + 1);

    track('begin');
    track('delete from assignments where id = $1');
    track('insert into assignments values ($1)');
    assert.equal(at(), start + 1, 'not before the transaction ends');
    track('commit');
    assert.equal(at(), start + 2, 'one move for the whole transaction');

    track('start transaction isolation level serializable');
    track('select * from users');
    track('commit');
    assert.equal(at(), start + 2, 'a transaction that only read');

    // Another connection's tracker has its own transaction state and the same count.
    const other = writes.connectionTracker();
    track('begin');
    other('delete from users where id = $1');
    assert.equal(at(), start + 3);
    track('rollback');
    assert.equal(at(), start + 3);
  });
});
