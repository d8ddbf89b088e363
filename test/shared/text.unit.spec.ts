import fc from 'fast-check';
import {
  decodeMachineBytes,
  decodeMachineText,
  encodeMachineBytes,
  encodeMachineText,
  findIllFormedText,
  fromMachineText,
  hasVisibleText,
  isWellFormedText,
  toMachineText,
} from '../../src/shared/text';

/** Full UTF-16: astral pairs, NUL, lone surrogates of both halves, the escape character itself. */
export const anyUtf16 = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udfff', '\ud83d', '\ude00', '\u241b', 'u', 'x', 'D', '0', 'A', 'é', '😀') }),
);

const WELL_FORMED_NO_NUL = (s: string) => !s.includes('\u0000') && !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

describe('well-formed text', () => {
  it('is well-formed Unicode without NUL, decided as a reference regex decides', () => {
    fc.assert(fc.property(anyUtf16, (s) => expect(isWellFormedText(s)).toBe(WELL_FORMED_NO_NUL(s))), { numRuns: 2000 });
    expect(isWellFormedText('a😀é')).toBe(true);
    expect(isWellFormedText('a\u0000')).toBe(false);
    expect(isWellFormedText('\ud83d')).toBe(false);
    expect(isWellFormedText('\ude00x')).toBe(false);
  });

  it('names the path of the first ill-formed string or key', () => {
    expect(findIllFormedText({ reason: 'ok', team: { executor: { tools: ['a', 'b\u0000'] } } }, '')).toEqual({
      path: 'team.executor.tools[1]',
      problem: 'holds a NUL character',
    });
    expect(findIllFormedText({ 'a b': '\ud800' }, 'data')).toEqual({ path: 'data["a b"]', problem: 'holds an unpaired UTF-16 surrogate' });
    expect(findIllFormedText({ ok: { ['k\u0000']: 1 } }, 'metadata')).toEqual({ path: 'metadata.ok', problem: 'has a key that holds a NUL character' });
    expect(findIllFormedText({ a: ['😀', 1, null, true] }, '')).toBeUndefined();
  });
});

describe('visible text', () => {
  it('is not blank when a reader can see a character of it: a letter, digit, punctuation mark or symbol', () => {
    for (const blank of ['', ' ', '\t\n', '\u00a0', '\u200b', '\u200b\u200c\u200d', '\ufeff', '\u2028', '\u3000', '\u0007', '\u00ad', '\u3164', '\uffa0\u115f\u1160', '\u2800']) {
      expect({ text: blank, visible: hasVisibleText(blank) }).toEqual({ text: blank, visible: false });
    }
    for (const seen of ['a', ' ok ', '7', '.', '😀', '\u200bx', '日本', 'é', '+', 'ـ', '\u2800a', 'नमस्ते', '❤️', '1️⃣', '👍🏽']) {
      expect({ text: seen, visible: hasVisibleText(seen) }).toEqual({ text: seen, visible: true });
    }
  });
});

describe('machine text', () => {
  it('leaves well-formed text without the escape character as it is', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (s) => {
        fc.pre(!s.includes('\u241b') && !s.includes('\u0000'));
        expect(encodeMachineText(s)).toBe(s);
      }),
    );
  });

  it('given any string, the encoding is well-formed without NUL and decodes back to it', () => {
    fc.assert(
      fc.property(anyUtf16, (s) => {
        const encoded = encodeMachineText(s);
        expect(isWellFormedText(encoded)).toBe(true);
        expect(decodeMachineText(encoded)).toBe(s);
        // The bytes a string's encoding stands for are its UTF-8 (WTF-8 for lone surrogates).
        if (!/[\ud800-\udfff]/.test(s)) expect(decodeMachineBytes(encoded).equals(Buffer.from(s, 'utf8'))).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it('given any bytes, the encoding is well-formed without NUL and decodes back to the same bytes', () => {
    const anyBytes = fc.oneof(
      fc.uint8Array({ maxLength: 200 }),
      fc.array(fc.constantFrom(0x00, 0x41, 0xe2, 0x90, 0x9b, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0x98, 0xc3, 0xa9, 0xff, 0xc0), { maxLength: 60 }).map((a) => Uint8Array.from(a)),
    );
    fc.assert(
      fc.property(anyBytes, (bytes) => {
        const encoded = encodeMachineBytes(bytes);
        expect(isWellFormedText(encoded)).toBe(true);
        expect(decodeMachineBytes(encoded).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it('escapes NUL, lone surrogates, the escape character and bytes that are not UTF-8', () => {
    expect(encodeMachineText('a\u0000b')).toBe('a␛u0000b');
    expect(encodeMachineText('\ud83d!\ude00')).toBe('␛uD83D!␛uDE00');
    expect(encodeMachineText('😀␛')).toBe('😀␛␛');
    expect(encodeMachineBytes(Buffer.from([0x41, 0xff, 0x00, 0xc3, 0xa9, 0xed, 0xa0, 0x80]))).toBe('A␛xFF␛u0000é␛xED␛xA0␛x80');
    // A ␛ that starts no escape (human text) decodes to itself.
    expect(decodeMachineText('␛ not an escape ␛u12')).toBe('␛ not an escape ␛u12');
  });

  it('converts every string and key of a JSON value, both ways, without changing the input', () => {
    const input = { ['k\u0000']: ['\ud800', { t: 'ok' }], n: 1 };
    const encoded = toMachineText(input);
    expect(encoded).toEqual({ 'k␛u0000': ['␛uD800', { t: 'ok' }], n: 1 });
    expect(input).toEqual({ ['k\u0000']: ['\ud800', { t: 'ok' }], n: 1 });
    expect(fromMachineText(encoded)).toEqual(input);
  });
});
