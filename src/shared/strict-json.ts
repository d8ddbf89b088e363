/**
 * JSON with one reading: a text that names a key twice in one object is refused.
 *
 * JSON.parse keeps the last of two equal keys, so `{"a":false,"a":true}` is `true` to triad while a
 * gateway, an audit tool or a log reader that keeps the first sees `false`: two readers, two
 * requests. No maintained parser refuses duplicates at native speed (the streaming ones that can
 * are tens of times slower than JSON.parse on a 2 MB body), so this is one loop over the text
 * beside JSON.parse: it only tracks object keys, and leaves validity to JSON.parse.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

interface Frame {
  object: boolean;
  path: string;
  keys?: Set<string>;
  /** Object: the next string is a key (after `{` or `,`). */
  expectKey: boolean;
  lastKey?: string;
  /** Array: the index of the item being read. */
  index: number;
}

/** Index of the quote that closes the string opened at `open` (native search, not a byte loop). */
function closingQuote(bytes: Uint8Array, open: number): number {
  for (let q = bytes.indexOf(QUOTE, open + 1); q >= 0; q = bytes.indexOf(QUOTE, q + 1)) {
    let backslashes = 0;
    while (bytes[q - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return q;
  }
  return bytes.length;
}

const decoder = new TextDecoder();

/** A key's value as JSON.parse reads it (`"\u0061"` is `a`); its raw text when it is not valid. */
function keyText(bytes: Uint8Array, open: number, close: number): string {
  const raw = decoder.decode(bytes.subarray(open, close + 1));
  try {
    return JSON.parse(raw) as string;
  } catch {
    return raw;
  }
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

function childPath(frame: Frame | undefined, root: string): string {
  if (frame === undefined) return root;
  if (!frame.object) return `${frame.path}[${frame.index}]`;
  const key = frame.lastKey ?? '';
  return IDENTIFIER.test(key) ? `${frame.path}.${key}` : `${frame.path}[${JSON.stringify(key)}]`;
}

/**
 * Where the JSON text `text` names a key twice in one object (`body.reviewPolicy.allow`), or
 * `undefined` when it does not. `root` names the whole value in that path.
 */
export function duplicateKeyIn(text: Uint8Array | string, root = 'body'): string | undefined {
  const bytes = typeof text === 'string' ? new TextEncoder().encode(text) : text;
  const stack: Frame[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    const top = stack[stack.length - 1];
    if (b === QUOTE) {
      const close = closingQuote(bytes, i);
      if (top?.object && top.expectKey) {
        const key = keyText(bytes, i, close);
        if (top.keys!.has(key)) return childPath({ ...top, lastKey: key }, root);
        top.keys!.add(key);
        top.lastKey = key;
        top.expectKey = false;
      }
      i = close;
    } else if (b === 0x7b) {
      stack.push({ object: true, path: childPath(top, root), keys: new Set(), expectKey: true, index: 0 });
    } else if (b === 0x5b) {
      stack.push({ object: false, path: childPath(top, root), expectKey: false, index: 0 });
    } else if (b === 0x7d || b === 0x5d) {
      stack.pop();
    } else if (b === 0x2c && top !== undefined) {
      if (top.object) top.expectKey = true;
      else top.index++;
    }
  }
  return undefined;
}

/** The message of a refusal of a duplicate key at `path`. */
export function duplicateKeyMessage(path: string): string {
  return `${path} is given twice; a key may appear once in an object`;
}
