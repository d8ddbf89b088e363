import type { ValidationError } from 'class-validator';

/**
 * One message per real problem of a validated body or query, for every route and the CLI verbs
 * that check their input with the same DTOs. class-validator runs every constraint of a property
 * and reports each that fails: an absent field fails its type, its length and its element-count
 * limits at once (`acceptanceCriteria must contain no more than 100 elements` for a field not
 * sent). Here a property gives one message: `<field> is required` when it is absent; otherwise
 * its type error when its type is wrong; otherwise the first failing constraint as the DTO lists
 * them. A nested field is named by its path (`team.executor.model must be a string`).
 */

/** Constraints about what a value is: when one fails, the others only repeat it. */
const TYPE_CONSTRAINTS: ReadonlySet<string> = new Set(['isDefined', 'isString', 'isArray', 'isInt', 'isNumber', 'isBoolean', 'isObject', 'nestedValidation']);

const WHITELIST = 'whitelist';
const NESTED = 'nestedValidation';

/** The messages of class-validator's errors, one per failing property, in the order the body's fields were checked. */
export function validationMessages(errors: readonly ValidationError[], parent = ''): string[] {
  const out: string[] = [];
  for (const error of errors) {
    const path = parent === '' ? error.property : `${parent}.${error.property}`;
    const constraints = error.constraints ?? {};
    const names = Object.keys(constraints);
    if (names.length > 0) out.push(oneMessage(error, path, parent, names));
    else if (error.children && error.children.length > 0) out.push(...validationMessages(error.children, path));
  }
  return out;
}

function oneMessage(error: ValidationError, path: string, parent: string, names: string[]): string {
  const constraints = error.constraints ?? {};
  if (names.includes(WHITELIST)) return `property ${path} should not exist`;
  if (error.value === undefined) return `${path} is required`;
  // class-validator records a property's constraints in the reverse of the order they are written
  // in, and a nested object's check after them all (its own message is the vaguer one).
  const declared = [...names.filter((n) => n !== NESTED).reverse(), ...names.filter((n) => n === NESTED)];
  const chosen = declared.find((name) => TYPE_CONSTRAINTS.has(name)) ?? declared[0];
  return withPath(constraints[chosen], error.property, path, parent);
}

/** A nested field's message names its whole path: the property's first mention becomes the path, or the path leads. */
function withPath(message: string, property: string, path: string, parent: string): string {
  if (parent === '') return message;
  const mention = new RegExp(`(^|[^A-Za-z0-9_.])${property.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![A-Za-z0-9_])`);
  return mention.test(message) ? message.replace(mention, (_m, before: string) => `${before}${path}`) : `${path}: ${message}`;
}
