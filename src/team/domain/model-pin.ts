import type { ModelProvider, ModelResponse, RoleName } from '../models/model.port';
import { ROLES } from './roles';
import type { ModelCallOrigin, RoleConfig, RunLaunchedData } from './run-events';

/**
 * A run's pin: per role, the provider, the model and the endpoint its calls go to, recorded at
 * launch (RunLaunched `pin`) and changed only by an operator (RunRepinned). Roles may be pinned to
 * different providers; a process drives a run only when it has each role's provider at that
 * role's endpoint (`matchPin`): whichever process picks a run up does not decide where its
 * conversation goes, nor which model's work a human approves.
 *
 * `endpoint`: the scheme, host and port of the provider's base URL (`https://api.anthropic.com:443`),
 * never a key, a path or a query; a provider with no network has `<name>:` (`offline:`). Absent only
 * in the pin of a run launched before pins were recorded (`pinOf`): any endpoint of its provider.
 */
export interface RolePin {
  provider: string;
  model: string;
  endpoint?: string;
}

export type RunPin = Record<RoleName, RolePin>;

/** A provider and the endpoint its calls go to. */
export interface ServedModel {
  provider: string;
  endpoint: string;
}

/**
 * What a process calls models with: its default provider and that provider's endpoint, and the
 * other providers it is set up for (`also`), which a launch may name for a role.
 */
export interface ProcessModel extends ServedModel {
  also?: readonly ServedModel[];
}

/** The provider and endpoint a process calls models with: `<name>:` for a provider with no endpoint (no network); its roster's others in `also`. */
export function processModelOf(provider: Pick<ModelProvider, 'name' | 'endpoint' | 'providers'>): ProcessModel {
  const served = (p: Pick<ModelProvider, 'name' | 'endpoint'>): ServedModel => ({ provider: p.name, endpoint: p.endpoint ?? `${p.name}:` });
  const also = [...(provider.providers?.values() ?? [])].filter((p) => p.name !== provider.name).map(served);
  return { ...served(provider), ...(also.length > 0 ? { also } : {}) };
}

/** What a process serves, in words: "provider anthropic at https://host:443 and provider openai at http://127.0.0.1:11434". */
export function describeProcessModel(here: ProcessModel): string {
  return [here, ...(here.also ?? [])].map((m) => `provider ${m.provider} at ${m.endpoint}`).join(' and ');
}

/** The process's provider of that name, with its endpoint; undefined when the process has none. */
export function servedBy(here: ProcessModel, provider: string): ServedModel | undefined {
  if (here.provider === provider) return { provider, endpoint: here.endpoint };
  return here.also?.find((m) => m.provider === provider);
}

/** What a model call's event records of where it went (see ModelCallOrigin). */
export function callOrigin(provider: Pick<ModelProvider, 'name' | 'endpoint'>, requestedModel: string, response: Pick<ModelResponse, 'requestId'>): ModelCallOrigin {
  const here = processModelOf(provider);
  return { provider: here.provider, endpoint: here.endpoint, requestedModel, ...(response.requestId !== undefined ? { requestId: response.requestId } : {}) };
}

/**
 * The run's pin: the recorded one, or, for a run launched before pins were, the provider its
 * RunLaunched names with each role's model and no endpoint (any endpoint of that provider).
 */
export function pinOf(launched: Pick<RunLaunchedData, 'pin' | 'provider' | 'team'>): RunPin {
  if (launched.pin) return launched.pin;
  const pin = {} as RunPin;
  for (const role of ROLES) pin[role] = { provider: launched.provider, model: launched.team[role].model };
  return pin;
}

/**
 * A launch's pin: every role on the provider its config names (else the launching process's
 * default) at that provider's endpoint here, with its own model. Throws for a provider the process
 * does not have: the launch checks that first (buildRunLaunched).
 */
export function launchPin(team: Record<RoleName, Pick<RoleConfig, 'model' | 'provider'>>, here: ProcessModel): RunPin {
  const pin = {} as RunPin;
  for (const role of ROLES) {
    const served = servedBy(here, team[role].provider ?? here.provider);
    if (!served) throw new TypeError(`team.${role}.provider ${team[role].provider} is not served here`);
    pin[role] = { provider: served.provider, model: team[role].model, endpoint: served.endpoint };
  }
  return pin;
}

export type PinMatch = { matches: true } | { matches: false; role: RoleName; wants: RolePin; waitingFor: string };

/**
 * Whether a process may drive a run pinned to `pin`: every role's provider is one of the process's
 * (its default or another it is set up for), at the same endpoint (when the pin has one). Pure: the one comparison every path to a driver uses.
 */
export function matchPin(pin: RunPin, here: ProcessModel): PinMatch {
  for (const role of ROLES) {
    const wants = pin[role];
    const served = servedBy(here, wants.provider);
    if (!served || (wants.endpoint !== undefined && wants.endpoint !== served.endpoint)) {
      return { matches: false, role, wants, waitingFor: waitingFor(pin) };
    }
  }
  return { matches: true };
}

/** What a run pinned to `pin` waits for: "a process with provider anthropic at https://host:443". */
export function waitingFor(pin: RunPin): string {
  const wanted = [...new Set(ROLES.map((role) => describePin(pin[role])))];
  if (wanted.length === 1) return `a process with ${wanted[0]}`;
  // A process has one endpoint per provider: two endpoints of one provider are no one process's.
  const providers = new Set(ROLES.map((role) => pin[role].provider));
  if (providers.size === wanted.length) return `a process with ${wanted.join(' and ')}`;
  return `processes with ${wanted.join(' and ')} (no one process serves them all: re-pin the run)`;
}

/** A pin in one line: each role's model, then where they go ("provider anthropic at https://host:443"). */
export function describeRunPin(pin: RunPin): string {
  const models = ROLES.map((role) => `${role} ${pin[role].model}`).join(', ');
  const where = [...new Set(ROLES.map((role) => describePin(pin[role])))].join('; ');
  return `${models} — ${where}`;
}

function describePin(p: RolePin): string {
  return `provider ${p.provider} at ${p.endpoint ?? 'any endpoint'}`;
}

/**
 * Whether an http(s) base URL holds a user name or password as the URL parser reads it
 * (`https:user:pw@host` and `https:\\user:pw@host` as well as `https://user:pw@host`): a model
 * server's URL is refused with one, since it would be named in logs and events (and the HTTP clients
 * refuse such a URL with an error that quotes it).
 */
export function carriesCredentials(baseUrl: string): boolean {
  const raw = baseUrl.trim();
  if (!/^https?:/i.test(raw)) return false;
  try {
    const url = new URL(raw);
    return url.username !== '' || url.password !== '';
  } catch {
    return false;
  }
}

/**
 * The endpoint of a base URL: its scheme, host and port (the scheme's default when none is
 * given), without credentials, path or query. `<name>:` (no host) stands for a provider with no
 * network. Undefined for what is neither.
 */
export function endpointOf(baseUrl: string): string | undefined {
  const named = /^([a-z][a-z0-9-]*):?$/i.exec(baseUrl.trim());
  if (named && !/^https?$/i.test(named[1])) return `${named[1].toLowerCase()}:`;
  let url: URL;
  try {
    url = new URL(baseUrl.trim());
  } catch {
    return undefined; // not a URL: the caller says what it expected
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.hostname === '') return undefined;
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${url.protocol}//${url.hostname.toLowerCase()}:${port}`;
}

/** The providers that call a network endpoint (their pins' endpoints are URLs). */
const NETWORK_PROVIDERS: ReadonlySet<string> = new Set(['anthropic', 'openai']);

/**
 * The provider an endpoint belongs to: `<name>:` is the provider `name` (`offline:`); a network
 * endpoint keeps the network provider a role had (`current`: an OpenAI-compatible role moved to
 * another server stays on Chat Completions), else it is the Messages API's (`anthropic`).
 */
export function providerOfEndpoint(endpoint: string, current?: string): string {
  if (!endpoint.startsWith('http://') && !endpoint.startsWith('https://')) return endpoint.slice(0, -1);
  return current !== undefined && NETWORK_PROVIDERS.has(current) ? current : 'anthropic';
}

/** An operator's change of a run's pin: new models for some roles, a new endpoint for the roles it moves (`repinned`). */
export interface PinChange {
  models?: Partial<Record<RoleName, string>>;
  /** Already normalised by `endpointOf`; each role's provider is `providerOfEndpoint(endpoint, its provider)`. */
  endpoint?: string;
}

/** The pin after a change. */
export function repinned(pin: RunPin, change: PinChange): RunPin {
  const next = {} as RunPin;
  const moved = movedRoles(pin, change.endpoint);
  for (const role of ROLES) {
    const was = pin[role];
    const endpoint = moved.has(role) ? change.endpoint : was.endpoint;
    next[role] = {
      provider: moved.has(role) ? providerOfEndpoint(change.endpoint!, was.provider) : was.provider,
      model: change.models?.[role] ?? was.model,
      ...(endpoint !== undefined ? { endpoint } : {}),
    };
  }
  return next;
}

/**
 * The roles a new endpoint moves: a network endpoint moves the roles that call one (a role left on
 * the offline model beside a role on a server stays where it is), and every role when none does;
 * a provider with no network (`offline:`) moves every role.
 */
function movedRoles(pin: RunPin, endpoint: string | undefined): ReadonlySet<RoleName> {
  if (endpoint === undefined) return new Set();
  const networked = ROLES.filter((role) => NETWORK_PROVIDERS.has(pin[role].provider));
  const network = endpoint.startsWith('http://') || endpoint.startsWith('https://');
  return new Set(network && networked.length > 0 ? networked : ROLES);
}

export function samePin(a: RunPin, b: RunPin): boolean {
  return ROLES.every((role) => a[role].provider === b[role].provider && a[role].model === b[role].model && a[role].endpoint === b[role].endpoint);
}

/** The models a provider serves, as far as triad knows them; undefined: any name (a test double). */
export interface ModelCatalogue {
  serves(model: string): boolean;
  /** What is accepted, in words for an error message. */
  accepts: string;
}

/** The first model of a team (role, loop and summary models) that its role's provider's catalogue does not serve, with where it is named. */
export function unservedModel(
  team: Record<RoleName, Pick<RoleConfig, 'model' | 'loop'>>,
  summaryModel: string | undefined,
  catalogueOf: (role: RoleName) => ModelCatalogue | undefined,
): { field: string; model: string; role: RoleName } | undefined {
  for (const role of ROLES) {
    const cfg = team[role];
    const catalogue = catalogueOf(role);
    if (!catalogue) continue;
    const named: Array<[string, string | undefined]> = [
      [`team.${role}.model`, cfg.model],
      [`team.${role}.loop.plannerModel`, cfg.loop?.plannerModel],
      [`team.${role}.loop.executorModel`, cfg.loop?.executorModel],
    ];
    for (const [field, model] of named) if (model !== undefined && !catalogue.serves(model)) return { field, model, role };
  }
  // Every role's summaries are written by the summary model, on the role's own provider.
  for (const role of ROLES) {
    const catalogue = catalogueOf(role);
    if (summaryModel !== undefined && catalogue && !catalogue.serves(summaryModel)) return { field: 'contextWindow.summaryModel', model: summaryModel, role };
  }
  return undefined;
}
