import { type CanActivate, type ExecutionContext, ForbiddenException, Inject, Injectable, SetMetadata, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiKeyDirectory, hasRole, type HumanRole, type Identity } from './identity';
import { MAY, type GuardedAction } from './roles';

export const ROLES_KEY = 'triad:roles';
export const PUBLIC_KEY = 'triad:public';

/** Roles that may call a route (admin always may). No decorator: any authenticated identity. */
export const Roles = (...roles: HumanRole[]) => SetMetadata(ROLES_KEY, roles);
/** Guards a route or controller by the role table (`MAY` in roles.ts). */
export const May = (action: GuardedAction) => Roles(...MAY[action]);
export const Public = () => SetMetadata(PUBLIC_KEY, true);

export interface AuthenticatedRequest {
  headers: Record<string, string | string[] | undefined>;
  identity?: Identity;
}

@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(ApiKeyDirectory) private readonly keys: ApiKeyDirectory,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, targets)) return true;
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const header = req.headers['authorization'];
    const value = Array.isArray(header) ? header[0] : header;
    const match = value ? /^Bearer\s+(\S+)$/i.exec(value) : null;
    if (!match) throw new UnauthorizedException('an API key is required: Authorization: Bearer <key>');
    const identity = this.keys.authenticate(match[1]);
    if (!identity) throw new UnauthorizedException('the API key is not valid');
    req.identity = identity;
    const roles = this.reflector.getAllAndOverride<HumanRole[] | undefined>(ROLES_KEY, targets);
    if (roles && roles.length > 0 && !hasRole(identity, ...roles)) {
      throw new ForbiddenException(`this action needs the role ${roles.join(' or ')}`);
    }
    return true;
  }
}
