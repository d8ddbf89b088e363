import { promises as fs } from 'node:fs';
import type { ToolDefinition } from '../tool.port';
import { realWorkspaceOf, resolveInWorkspace } from '../workspace';
import type { BuiltinToolLimits } from './limits';
import { fail, fsFailure, ok, quote } from './outcomes';
import { walk } from './walk';

/** list_files: a directory of the workspace, optionally recursive, at most `listMaxEntries` entries. */
export function listFilesTool(limits: BuiltinToolLimits): ToolDefinition {
  return {
    name: 'list_files',
    description:
      'List a directory of the workspace (default: its root), sorted, with directories marked by a trailing "/" and ' +
      `symbolic links by "@". recursive walks subdirectories (not .git or node_modules). At most ${limits.listMaxEntries} entries.`,
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Directory relative to the workspace (default ".").' },
        recursive: { type: 'boolean', description: 'Also list subdirectories (default false).' },
      },
      additionalProperties: false,
    },
    readOnly: true,
    idempotent: true,
    risk: 'low',
    async execute(input, context) {
      const userPath = (input.path as string | undefined) || '.';
      try {
        const dir = await resolveInWorkspace(context.workspace, userPath, { realRoot: context.realWorkspace });
        const stat = await fs.stat(dir);
        if (!stat.isDirectory()) return fail(`${quote(userPath)} is not a directory; use read_file to read it`);
        const realWorkspace = await realWorkspaceOf(context);
        const { entries, truncated } = await walk(realWorkspace, dir, {
          recursive: input.recursive === true,
          max: limits.listMaxEntries,
          signal: context.signal,
        });
        if (context.signal.aborted) return fail('listing cancelled');
        if (entries.length === 0) return ok(`(${quote(userPath)} is empty)`);
        const lines = entries.map((e) => (e.kind === 'dir' ? `${e.rel}/` : e.kind === 'link' ? `${e.rel}@` : e.rel));
        if (truncated) lines.push(`[listing stopped after ${limits.listMaxEntries} entries; list a subdirectory to see more]`);
        return ok(lines.join('\n'));
      } catch (err) {
        return fsFailure(err, userPath, 'list');
      }
    },
  };
}
