import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CsvRecordEnds } from '../../src/util/download.js';

/** LF record ends become CRLF; line breaks inside quoted fields stay; chunks may split anything. */
describe('CsvRecordEnds', () => {
  const lf = 'id,text\n1,"two\nlines"\n2,"a ""quoted"" word, and\na break"\n3,plain\n4,""\n';
  const crlf = 'id,text\r\n1,"two\nlines"\r\n2,"a ""quoted"" word, and\na break"\r\n3,plain\r\n4,""\r\n';

  it('converts a whole file at once', () => {
    assert.equal(new CsvRecordEnds().convert(Buffer.from(lf)).toString(), crlf);
  });

  it('converts the same whichever way the bytes are split into chunks', () => {
    const bytes = Buffer.from(lf);
    for (let cut = 0; cut <= bytes.length; cut++) {
      for (const second of [cut, Math.min(bytes.length, cut + 3)]) {
        const ends = new CsvRecordEnds();
        const parts = [bytes.subarray(0, cut), bytes.subarray(cut, second), bytes.subarray(second)].map((part) => ends.convert(part));
        assert.equal(Buffer.concat(parts).toString(), crlf, `cut at ${cut} and ${second}`);
      }
    }
  });

  it('hands a chunk without a record end back as it is', () => {
    const chunk = Buffer.from('1,"no end\nhere');
    assert.equal(new CsvRecordEnds().convert(chunk), chunk);
  });
});
