import type { AgentCard, AgentSkill } from '@a2a-js/sdk';

/**
 * triad's A2A agent card, pure: one JSON-RPC endpoint (`/a2a`) that speaks A2A 1.0 and 0.3, two
 * skills (a team run, a project), streaming, and the bearer API keys of the rest of the API. Served
 * at `/.well-known/agent-card.json` in the shape the client asks for (`A2A-Version`).
 */

export const A2A_PATH = '/a2a';
export const AGENT_CARD_PATH = '/.well-known/agent-card.json';

const NAME = 'triad';
const DESCRIPTION =
  'Event-sourced orchestrator for teams of LLM agents: an Architect plans, an Executor works in a workspace of its own, a Reviewer reviews, and a human approves or rejects the work at the review gate.';
const BEARER = 'A triad API key (TRIAD_API_KEYS or `triad keys add`): launching and cancelling need the operator role, reading any key.';

interface SkillText {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples: string[];
}

const SKILLS: SkillText[] = [
  {
    id: 'team-run',
    name: 'team run',
    description:
      'A goal (the text part) and its acceptance criteria (data part: {"acceptanceCriteria": [...], "team"?, "maxIterations"?, ...: the body of POST /v1/runs}) done by an Architect, an Executor and a Reviewer. The task waits (input-required) at the human review gate; its artifacts are the workspace files.',
    tags: ['agents', 'code', 'review'],
    examples: ['Write a greeting — data: {"acceptanceCriteria": ["file hello.txt contains \\"Hello\\""]}'],
  },
  {
    id: 'project',
    name: 'project',
    description:
      'A goal split into a graph of tasks, each a team run (data part: {"skill": "project", "tasks"?, "strategy"?, "concurrency"?, ...: the body of POST /v1/projects}); without tasks the architect decomposes the goal. One human review of the whole project.',
    tags: ['agents', 'planning'],
    examples: ['Build a greeting site — data: {"skill": "project", "strategy": "dag"}'],
  },
];

/** The card as A2A 1.0 types (the SDK's version checks read its interfaces). */
export function agentCard(baseUrl: string, version: string): AgentCard {
  const url = `${baseUrl}${A2A_PATH}`;
  const skills: AgentSkill[] = SKILLS.map((s) => ({ ...s, inputModes: ['text/plain', 'application/json'], outputModes: ['text/plain'], securityRequirements: [] }));
  return {
    name: NAME,
    description: DESCRIPTION,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    provider: undefined,
    version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: { bearer: { scheme: { $case: 'httpAuthSecurityScheme', value: { description: BEARER, scheme: 'Bearer', bearerFormat: '' } } } },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills,
    signatures: [],
  };
}

/** The card in A2A 0.3's JSON shape, as GET /.well-known/agent-card.json answers without `A2A-Version: 1.0`. */
export interface AgentCardV03 {
  protocolVersion: string;
  name: string;
  description: string;
  url: string;
  preferredTransport: 'JSONRPC';
  additionalInterfaces: Array<{ url: string; transport: string }>;
  version: string;
  capabilities: { streaming: boolean; pushNotifications: boolean; stateTransitionHistory: boolean };
  securitySchemes: Record<string, { type: string; scheme: string; description: string }>;
  security: Array<Record<string, string[]>>;
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: Array<SkillText & { inputModes: string[]; outputModes: string[] }>;
  supportsAuthenticatedExtendedCard: boolean;
}

/** The same card in A2A 0.3's JSON shape (a top-level `url`, OpenAPI-style security schemes). */
export function agentCardV03(baseUrl: string, version: string): AgentCardV03 {
  const url = `${baseUrl}${A2A_PATH}`;
  return {
    protocolVersion: '0.3.0',
    name: NAME,
    description: DESCRIPTION,
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    version,
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: BEARER } },
    security: [{ bearer: [] }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: SKILLS.map((s) => ({ ...s, inputModes: ['text/plain', 'application/json'], outputModes: ['text/plain'] })),
    supportsAuthenticatedExtendedCard: false,
  };
}
