import { randomBytes } from 'node:crypto';

let lastMs = 0;
let sequence = 0;

/**
 * A time-ordered UUID (RFC 9562 version 7): 48 bits of Unix milliseconds, a 12-bit sequence that
 * keeps ids from one process increasing within a millisecond, then 62 random bits. Event ids are
 * indexed; ids that grow with time land on the index's last page instead of a random one, which is
 * what keeps appends fast as the store grows.
 */
export function uuidv7(now: number = Date.now()): string {
  let ms = now;
  if (ms > lastMs) {
    lastMs = ms;
    sequence = randomBytes(2).readUInt16BE(0) & 0x3ff; // start low, leave room to count up
  } else {
    ms = lastMs;
    sequence++;
    if (sequence > 0xfff) {
      // More than 4096 ids in one millisecond: borrow the next millisecond.
      lastMs = ++ms;
      sequence = 0;
    }
  }
  const b = randomBytes(16);
  b.writeUIntBE(ms, 0, 6);
  b[6] = 0x70 | (sequence >> 8);
  b[7] = sequence & 0xff;
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
