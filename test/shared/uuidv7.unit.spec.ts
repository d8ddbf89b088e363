import { uuidv7 } from '../../src/shared/uuidv7';

describe('uuidv7', () => {
  it('is a version-7, variant-1 UUID carrying its millisecond', () => {
    const id = uuidv7(0x0189_abcd_ef01);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(id.replace(/-/g, '').slice(0, 12)).toBe('0189abcdef01');
  });

  it('ids from one process sort in the order they were made, also within one millisecond', () => {
    const ids = Array.from({ length: 10_000 }, () => uuidv7(1_700_000_000_000));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('never goes backwards when the clock does', () => {
    const a = uuidv7(1_800_000_000_000);
    const b = uuidv7(1_799_999_999_000);
    expect(b > a).toBe(true);
  });
});

describe('uuidv7 randomness', () => {
  it('ids of different milliseconds differ in their random part, also across pool refills', () => {
    const tails = new Set<string>();
    for (let i = 0; i < 2_000; i++) tails.add(uuidv7(1_900_000_000_000 + i).slice(19));
    expect(tails.size).toBe(2_000);
  });

  it('encodes large timestamps exactly (all 48 bits)', () => {
    const ms = 0xfedc_ba98_7654;
    expect(uuidv7(ms).replace(/-/g, '').slice(0, 12)).toBe('fedcba987654');
  });
});
