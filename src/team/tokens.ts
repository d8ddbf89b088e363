export const TOOL_REGISTRY = Symbol('TOOL_REGISTRY');
/** The process's OS sandbox for the processes tools start (tools/sandbox/sandbox.ts). */
export const SANDBOX = Symbol('SANDBOX');
