import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { AuthenticatedRequest } from './auth.guard';
import type { Identity } from './identity';

export const CurrentIdentity = createParamDecorator((_data: unknown, ctx: ExecutionContext): Identity => {
  const req = ctx.switchToHttp().getRequest<AuthenticatedRequest>();
  return req.identity!;
});
