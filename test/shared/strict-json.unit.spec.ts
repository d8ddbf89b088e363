import { duplicateKeyIn } from '../../src/shared/strict-json';

// One reading of a JSON text: a key named twice in one object is found wherever it is, however it
// is spelled, and nothing else is mistaken for one.

describe('duplicateKeyIn', () => {
  it('given no duplicate, then nothing is found, whatever the nesting and the strings hold', () => {
    for (const text of ['{}', '[]', '{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}', '{"a":"\\"a\\":1,\\"a\\":2","b":"{\\"x\\":1,\\"x\\":2}"}', '"a"', '[{"k":1},{"k":1}]']) {
      expect(duplicateKeyIn(text)).toBeUndefined();
    }
  });

  it('given a duplicate at any depth, then its path is named', () => {
    expect(duplicateKeyIn('{"a":1,"a":2}')).toBe('body.a');
    expect(duplicateKeyIn('{"p":{"allow":false,"allow":true}}')).toBe('body.p.allow');
    expect(duplicateKeyIn('{"list":[{"k":1},{"k":1,"k":2}]}')).toBe('body.list[1].k');
    expect(duplicateKeyIn('[[{"x":[1,2]}],{"y":{"z":0,"z":1}}]', '--task')).toBe('--task[1].y.z');
    expect(duplicateKeyIn('{"a b":1,"a b":2}')).toBe('body["a b"]');
  });

  it('given the same key spelled with escapes, then it is the same key', () => {
    expect(duplicateKeyIn('{"goal":"a","\\u0067oal":"b"}')).toBe('body.goal');
    expect(duplicateKeyIn('{"a\\"b":1,"a\\u0022b":2}')).toBe('body["a\\"b"]');
  });

  it('given bytes, then it reads them as UTF-8 text', () => {
    expect(duplicateKeyIn(Buffer.from('{"é":1,"\\u00e9":2}'))).toBe('body["é"]');
  });
});
