import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { ToolDefinition } from '../tool.port';
import { resolveInWorkspace } from '../workspace';
import { writeAtomically } from './atomic-write';
import { fsFailure, ok, quote } from './outcomes';

/** write_file: creates or replaces a workspace file, atomically. */
export function writeFileTool(): ToolDefinition {
  return {
    name: 'write_file',
    description:
      'Create or replace a file in the workspace with the given content, creating parent directories. The write is atomic: ' +
      'readers see the old or the new content, never a mix.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'Path relative to the workspace.' },
        content: { type: 'string', description: 'The complete new content of the file.' },
      },
      required: ['path', 'content'],
      additionalProperties: false,
    },
    readOnly: false,
    // Writing the same content twice leaves the same file: safe to re-run after a crash.
    idempotent: true,
    risk: 'low',
    async execute(input, context) {
      const userPath = input.path as string;
      const content = input.content as string;
      try {
        const file = await resolveInWorkspace(context.workspace, userPath, { forWrite: true, realRoot: context.realWorkspace });
        let confirmed = file;
        // A file at the workspace's top has its directory already: nothing to make, nothing to check again.
        if (context.realWorkspace === undefined || path.dirname(file) !== context.realWorkspace) {
          await fs.mkdir(path.dirname(file), { recursive: true });
          // mkdir may have raced with a link being planted: check again before writing.
          confirmed = await resolveInWorkspace(context.workspace, userPath, { forWrite: true, realRoot: context.realWorkspace });
        }
        const bytes = await writeAtomically(confirmed, content);
        return ok(`wrote ${bytes} bytes to ${quote(userPath)}`);
      } catch (err) {
        return fsFailure(err, userPath, 'write');
      }
    },
  };
}
