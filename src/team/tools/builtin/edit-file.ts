import { promises as fs } from 'node:fs';
import type { ToolDefinition } from '../tool.port';
import { resolveInWorkspace } from '../workspace';
import { writeAtomically } from './atomic-write';
import { fail, fsFailure, ok, quote } from './outcomes';

/** edit_file: replaces exact text in a workspace file; refuses a missing or ambiguous match. */
export function editFileTool(): ToolDefinition {
  return {
    name: 'edit_file',
    description:
      'Replace exact text in a workspace file. `old` must occur exactly once unless replaceAll is true; include enough ' +
      'surrounding lines to make it unique. Fails without changing the file when `old` is missing or ambiguous.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'Path relative to the workspace.' },
        old: { type: 'string', minLength: 1, description: 'The exact text to replace.' },
        new: { type: 'string', description: 'The replacement text.' },
        replaceAll: { type: 'boolean', description: 'Replace every occurrence (default false).' },
      },
      required: ['path', 'old', 'new'],
      additionalProperties: false,
    },
    readOnly: false,
    // Re-running a successful edit finds `old` gone (or replaces again): not safe to repeat blindly.
    idempotent: false,
    risk: 'low',
    async execute(input, context) {
      const userPath = input.path as string;
      const oldText = input.old as string;
      const newText = input.new as string;
      const replaceAll = input.replaceAll === true;
      if (oldText === newText) return fail('old and new are identical; nothing to change');
      try {
        const file = await resolveInWorkspace(context.workspace, userPath, { forWrite: true, realRoot: context.realWorkspace });
        const stat = await fs.stat(file);
        if (stat.isDirectory()) return fail(`${quote(userPath)} is a directory`);
        if (!stat.isFile()) return fail(`${quote(userPath)} is not a regular file`);
        if (stat.nlink > 1) return fail(`${quote(userPath)} is a hard link (the file has other names, which may be outside the workspace); it is not edited`);
        const text = await fs.readFile(file, 'utf8');
        if (text.includes('\0')) return fail(`${quote(userPath)} looks like a binary file; edit_file edits text only`);
        const count = countOccurrences(text, oldText);
        if (count === 0) return fail(`old text not found in ${quote(userPath)}; read the file and copy the text exactly`);
        if (count > 1 && !replaceAll) {
          return fail(
            `old text occurs ${count} times in ${quote(userPath)}; add surrounding context to make it unique, or set replaceAll`,
          );
        }
        // split/join, not String.replace: `$&` and friends in the new text must stay literal.
        const updated = replaceAll ? text.split(oldText).join(newText) : replaceFirst(text, oldText, newText);
        await writeAtomically(file, updated);
        return ok(`replaced ${replaceAll ? count : 1} occurrence${(replaceAll ? count : 1) === 1 ? '' : 's'} in ${quote(userPath)}`);
      } catch (err) {
        return fsFailure(err, userPath, 'edit');
      }
    },
  };
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count += 1;
  return count;
}

function replaceFirst(text: string, needle: string, replacement: string): string {
  const at = text.indexOf(needle);
  return text.slice(0, at) + replacement + text.slice(at + needle.length);
}
