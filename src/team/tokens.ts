export const TOOL_REGISTRY = Symbol('TOOL_REGISTRY');
