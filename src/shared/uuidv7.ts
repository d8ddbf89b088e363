import { randomFillSync } from 'node:crypto';

let lastMs = 0;
let sequence = 0;

/**
 * Random bytes are drawn from the CSPRNG a pool at a time: one `randomFillSync` call per 512 ids
 * instead of one per id, which was a tenth of the cost of appending a turn. The pool is refilled
 * in place and each byte is used once.
 */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

function randomChunk(n: number): number {
  if (poolOffset + n > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += n;
  return at;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

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
    const at = randomChunk(2);
    sequence = ((pool[at] << 8) | pool[at + 1]) & 0x3ff; // start low, leave room to count up
  } else {
    ms = lastMs;
    sequence++;
    if (sequence > 0xfff) {
      // More than 4096 ids in one millisecond: borrow the next millisecond.
      lastMs = ++ms;
      sequence = 0;
    }
  }
  const r = randomChunk(8);
  // 48-bit millisecond timestamp, big-endian (split: bitwise operators work on 32 bits).
  const high = Math.floor(ms / 0x1_0000_0000);
  const low = ms >>> 0;
  const time = HEX[(high >>> 8) & 0xff] + HEX[high & 0xff] + HEX[low >>> 24] + HEX[(low >>> 16) & 0xff] + HEX[(low >>> 8) & 0xff] + HEX[low & 0xff];
  const ver = HEX[0x70 | (sequence >> 8)] + HEX[sequence & 0xff];
  const variant = HEX[0x80 | (pool[r] & 0x3f)] + HEX[pool[r + 1]];
  let tail = '';
  for (let i = 2; i < 8; i++) tail += HEX[pool[r + i]];
  return `${time.slice(0, 8)}-${time.slice(8)}-${ver}-${variant}-${tail}`;
}
