import { instanceToPlain, plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { InvalidRequestError } from '../shared/errors';
import { validationMessages } from '../http/validation-messages';
import { findIllFormedText } from '../shared/text';
import { LaunchRunDto } from '../team/http/launch-run.dto';
import { LaunchProjectDto } from '../projects/http/project.dto';
import type { LaunchRunInput } from '../team/commands/launch';
import type { LaunchProjectInput } from '../projects/projects.service';

/**
 * A launch that arrives another way than `POST /v1/runs` or `POST /v1/projects` (an A2A message,
 * an MCP tool call) is checked by the same DTOs with the same options as the HTTP routes'
 * ValidationPipe (unknown fields refused, no type conversion) and the same text rule, so every
 * door takes exactly the same launches. A refusal is an InvalidRequestError in the routes' words:
 * one message per real problem (validation-messages.ts).
 */

export class LaunchInputError extends InvalidRequestError {
  override name = 'LaunchInputError';
}

function validated<T extends object>(dto: new () => T, plain: Record<string, unknown>): Record<string, unknown> {
  const ill = findIllFormedText(plain, '');
  if (ill) throw new LaunchInputError(`${ill.path === '' ? 'the launch' : ill.path} ${ill.problem}; text must be well-formed Unicode without NUL`);
  const instance = plainToInstance(dto, plain, { enableImplicitConversion: false });
  const errors = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true, stopAtFirstError: false });
  if (errors.length > 0) throw new LaunchInputError(validationMessages(errors).join('; '));
  return instanceToPlain(instance);
}

/** A team run's launch, as `POST /v1/runs` takes its body. */
export function validatedRunLaunch(plain: Record<string, unknown>): LaunchRunInput {
  return validated(LaunchRunDto, plain) as unknown as LaunchRunInput;
}

/** A project's launch, as `POST /v1/projects` takes its body. */
export function validatedProjectLaunch(plain: Record<string, unknown>): LaunchProjectInput {
  return validated(LaunchProjectDto, plain) as unknown as LaunchProjectInput;
}
