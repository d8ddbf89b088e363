export const DEFAULT_MODEL = Symbol('DEFAULT_MODEL');
