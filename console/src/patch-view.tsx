/** A unified diff as the server writes it, each line marked: file heads, hunk heads, added, removed, context. */
export function PatchView({ patch, label }: { patch: string; label: string }) {
  if (patch === '') return <p>No file changed.</p>;
  const kind = (line: string) =>
    line.startsWith('--- ') || line.startsWith('+++ ') ? 'head' : line.startsWith('@@') ? 'hunk' : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : 'same';
  return (
    <pre class="diff" tabIndex={0} aria-label={label}>
      {patch
        .replace(/\n$/, '')
        .split('\n')
        .map((line, i) => (
          <span key={i} class={kind(line)}>
            {`${line}\n`}
          </span>
        ))}
    </pre>
  );
}
