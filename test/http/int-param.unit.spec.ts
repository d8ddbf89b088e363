import { parseIntParam } from '../../src/http/int-param';
import { InvalidRequestError } from '../../src/shared/errors';

// The one reading of integer query and path values (docs/API.md "Query parameters").

const refusal = (raw: string, min = 0, max = 100) => {
  try {
    parseIntParam('n', raw, 7, min, max);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidRequestError);
    return (err as Error).message;
  }
  throw new Error(`${JSON.stringify(raw)} was accepted`);
};

describe('parseIntParam', () => {
  it('given no value, then the default, or undefined when the route has none', () => {
    expect(parseIntParam('n', undefined, 7, 0, 100)).toBe(7);
    expect(parseIntParam('n', undefined, undefined, 0, 100)).toBeUndefined();
  });

  it('given decimal digits within the range, then that number, leading zeros read as written', () => {
    expect(parseIntParam('n', '0', 7, 0, 100)).toBe(0);
    expect(parseIntParam('n', '100', 7, 0, 100)).toBe(100);
    expect(parseIntParam('n', '007', undefined, 0, 100)).toBe(7);
  });

  it('given anything but decimal digits, then 400: not a non-negative integer', () => {
    for (const raw of ['', 'abc', '1e3', '-1', '+1', '1.5', '0x10', ' 1', '1 ', '١']) {
      expect(refusal(raw)).toBe('n must be a non-negative integer');
    }
  });

  it('given digits outside the range, then 400 naming the range', () => {
    expect(refusal('0', 1, 1000)).toBe('n must be between 1 and 1000');
    expect(refusal('1001', 1, 1000)).toBe('n must be between 1 and 1000');
    expect(refusal('99999999999999999999', 0, Number.MAX_SAFE_INTEGER)).toBe(`n must be between 0 and ${Number.MAX_SAFE_INTEGER}`);
  });
});
