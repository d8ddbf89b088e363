import { encodeMachineBytes } from '../../../shared/text';

/** Keeps the first and last halves of a byte stream, counting what falls in between. */
export class HeadTailBuffer {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private omitted = 0;
  private readonly headLimit: number;
  private readonly tailLimit: number;

  constructor(max: number) {
    this.headLimit = Math.ceil(max / 2);
    this.tailLimit = Math.floor(max / 2);
  }

  push(chunk: Buffer): void {
    let rest = chunk;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(this.headLimit - this.headBytes, rest.length);
      this.head.push(Buffer.from(rest.subarray(0, take)));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(Buffer.from(rest));
    this.tailBytes += rest.length;
    while (this.tailBytes > this.tailLimit) {
      const first = this.tail[0]!;
      const excess = this.tailBytes - this.tailLimit;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.omitted += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.omitted += excess;
      }
    }
  }

  /** Machine text (src/shared/text.ts): NUL and bytes that are not UTF-8 are kept as escapes. */
  text(): string {
    const head = encodeMachineBytes(Buffer.concat(this.head));
    const tail = encodeMachineBytes(Buffer.concat(this.tail));
    if (this.omitted === 0) return head + tail;
    return `${head}\n[… ${this.omitted} bytes of output omitted …]\n${tail}`;
  }
}
