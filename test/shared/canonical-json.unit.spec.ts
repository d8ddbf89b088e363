import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../../src/shared/canonical-json';

/** Reference oracle: the simplest sorted-keys JSON (an object's integer-like keys would defeat sorting by rebuilding it). */
function reference(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(reference).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).filter((k) => (v as Record<string, unknown>)[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${reference((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

describe('canonicalJson', () => {
  it('given any JSON value, it is its JSON text with the keys of every object sorted, and parses back to an equal value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(text).toBe(reference(value));
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 500 },
    );
  });

  it('given objects of few and of many keys, of any characters, it sorts them by UTF-16 code units', () => {
    const key = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('a', 'b', 'aa', 'A', '\uffff', '\ud83d\ude00', '__proto__'));
    fc.assert(
      fc.property(fc.dictionary(key, fc.oneof(fc.integer(), fc.string()), { maxKeys: 40 }), (value) => {
        expect(canonicalJson(value)).toBe(reference(value));
      }),
      { numRuns: 500 },
    );
  });

  it('leaves out object properties whose value is undefined, as JSON does', () => {
    expect(canonicalJson({ b: 1, a: undefined, c: { z: [1, 'x'], y: null } })).toBe('{"b":1,"c":{"y":null,"z":[1,"x"]}}');
  });

  it('accepts the same object twice when it is not a cycle', () => {
    const shared = { k: 1 };
    expect(canonicalJson({ a: shared, b: [shared, shared] })).toBe('{"a":{"k":1},"b":[{"k":1},{"k":1}]}');
  });

  it.each([
    ['a cycle', (() => { const o: Record<string, unknown> = { a: { b: [] as unknown[] } }; ((o.a as { b: unknown[] }).b).push(o); return o; })(), /\$\.a\.b\[0\] is a circular reference/],
    ['a non-finite number', { n: [1, Number.NaN] }, /\$\.n\[1\] is a non-finite number/],
    ['undefined in an array', [1, undefined], /\$\[1\] is of type undefined/],
    ['a class instance', { d: new Date(0) }, /\$\.d is a Date object/],
    ['a bigint', { big: 1n }, /\$\.big is of type bigint/],
    ['a function', { f: () => 1 }, /\$\.f is of type function/],
  ])('refuses %s, naming where it is', (_what, value, message) => {
    expect(() => canonicalJson(value)).toThrow(message);
  });
});

describe('canonicalJson is RFC 8785 (JCS) for well-formed input', () => {
  it('serialises the RFC example as the RFC does (numbers, string escapes, literals, key order)', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('sorts keys by UTF-16 code units, as the RFC\'s sorting example does', () => {
    const keys = ['\u20ac', '\r', '\ufb33', '1', '\ud83d\ude00', '\u0080', '\u00f6'];
    const text = canonicalJson(Object.fromEntries(keys.map((k) => [k, 0])));
    // Compared as text: a parsed object would list the integer-like key first again.
    expect(text).toBe(`{${['\r', '1', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33'].map((k) => `${JSON.stringify(k)}:0`).join(',')}}`);
  });

  it('outside JCS (not I-JSON): an unpaired surrogate gets JSON.stringify\'s escape; the event store refuses it before', () => {
    expect(canonicalJson({ s: 'a\ud800' })).toBe('{"s":"a\\ud800"}');
  });
});

describe('sha256Hex', () => {
  it('is the sha256 digest of the text, in hex', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (s) => expect(sha256Hex(s)).toBe(createHash('sha256').update(s).digest('hex'))));
  });
});
