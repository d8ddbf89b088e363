import { HttpException, type Type } from '@nestjs/common';
import { VALIDATION_PIPE } from '../http/bootstrap';
import { CliError, EXIT } from './exit-codes';
import { inFlagTerms, type FlagOfField } from './flag-messages';

/**
 * A verb that builds an API body from its arguments checks it with the route's own DTO and pipe,
 * so the CLI refuses exactly what the API would; the refusal names the verb's flags, not the
 * body's fields, all on one line (exit 2).
 */

/** The body as the route's DTO (validated and transformed), or a usage error naming the flags at fault. */
export async function validateAsFlags<T>(metatype: Type<T>, body: unknown, flags: readonly FlagOfField[]): Promise<T> {
  try {
    return (await VALIDATION_PIPE.transform(body, { type: 'body', metatype })) as T;
  } catch (err) {
    if (err instanceof HttpException) {
      const msg = (err.getResponse() as { message?: string | string[] }).message ?? err.message;
      // One flag may set many fields (`--model` every role's): its problem is said once.
      const said = new Set((Array.isArray(msg) ? msg : [msg]).map((m) => inFlagTerms(m, flags)));
      throw new CliError([...said].join('; '), EXIT.usage);
    }
    throw err;
  }
}
