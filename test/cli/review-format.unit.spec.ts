import { colourPatch, useColour } from '../../src/cli/review-format';

// `triad review show` and `triad runs workspace` colour diffs on a terminal only, and never under NO_COLOR.

describe('the diff colours of the CLI', () => {
  it('given a terminal, then colour; given a pipe or NO_COLOR, then none (an empty NO_COLOR counts as unset)', () => {
    expect(useColour({ isTTY: true }, {})).toBe(true);
    expect(useColour({ isTTY: false }, {})).toBe(false);
    expect(useColour({}, {})).toBe(false);
    expect(useColour({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(useColour({ isTTY: true }, { NO_COLOR: '' })).toBe(true);
  });

  it('given a patch in colour, then removed lines are red, added green, hunk heads cyan, context plain', () => {
    const patch = '--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n same\n-old\n+new\n';
    expect(colourPatch(patch, true).split('\n')).toEqual([
      '\x1b[1m--- a/x\x1b[0m',
      '\x1b[1m+++ b/x\x1b[0m',
      '\x1b[36m@@ -1,2 +1,2 @@\x1b[0m',
      ' same',
      '\x1b[31m-old\x1b[0m',
      '\x1b[32m+new\x1b[0m',
      '',
    ]);
    expect(colourPatch(patch, false)).toBe(patch);
  });
});
