import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { AuthenticatedRequest } from './auth.guard';
import type { Identity } from './identity';

export const CurrentIdentity = createParamDecorator((_data: unknown, ctx: ExecutionContext): Identity => {
  const req = ctx.switchToHttp().getRequest<AuthenticatedRequest>();
  return req.identity!;
});

/** How the request's identity was proven: a console session cookie, or an API key. */
export const CurrentCredential = createParamDecorator((_data: unknown, ctx: ExecutionContext): 'api_key' | 'console_session' => {
  const req = ctx.switchToHttp().getRequest<AuthenticatedRequest>();
  return req.consoleSession ? 'console_session' : 'api_key';
});
