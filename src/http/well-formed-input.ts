import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { type ArgumentMetadata, BadRequestException, type PipeTransform } from '@nestjs/common';
import { findIllFormedText } from '../shared/text';

/**
 * Human input must be well-formed text (see "Text in events" in docs/EVENTS.md): a request whose
 * body is not UTF-8, or whose body, query or path values hold a NUL or an unpaired surrogate, is
 * refused with 400 naming the field, before any handler runs, so nothing is written (query and path
 * values: src/http/route-inputs.ts).
 */

/**
 * body-parser's `verify` hook: it sees the raw bytes, which decoding would otherwise turn into
 * U+FFFD without a trace. The error's status is body-parser's answer (its default is 403).
 */
function refuseInvalidUtf8(_req: IncomingMessage, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) throw Object.assign(new Error('the request body is not valid UTF-8'), { status: 400, expose: true, type: 'entity.verify.failed' });
}

type VerifyHook = (req: IncomingMessage, res: unknown, body: Buffer, encoding: string) => void;

/**
 * JSON body-parser options with the UTF-8 check added before the options' own `verify` hook, if
 * any. Nest's types reserve `verify` because Nest sets it itself when the app is created with
 * `rawBody: true`; this app is not, so options pass through to body-parser as given.
 */
export function withUtf8Check<T extends { verify?: VerifyHook }>(options: T): T {
  const next = options.verify;
  const verify: VerifyHook = (req, res, body, encoding) => {
    refuseInvalidUtf8(req, res, body);
    next?.(req, res, body, encoding);
  };
  return { ...options, verify };
}

/**
 * A global pipe: every `@Body()` value, walked once. Query and path values are checked, with the
 * same words, by the route-inputs guard, which runs before any pipe.
 */
export class WellFormedInputPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'body') return value;
    const found = findIllFormedText(value, metadata.data ?? '');
    if (found) {
      const field = found.path === '' ? 'the request body' : found.path;
      throw new BadRequestException(`${field} ${found.problem}; text must be well-formed Unicode without NUL`);
    }
    return value;
  }
}
