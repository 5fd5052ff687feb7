/**
 * The TypeScript section of BENCHMARKS.md lives between two markers;
 * `npm run bench:write` replaces what is between them (or appends the
 * section, markers included, when the file has none).
 */
export const START = '<!-- typescript:start -->';
export const END = '<!-- typescript:end -->';

/** `doc` with `section` between the markers. Throws if only one marker is there, or they are out of order. */
export function replaceSection(doc: string, section: string): string {
  const body = section.endsWith('\n') ? section : `${section}\n`;
  const s = doc.indexOf(START);
  const e = doc.indexOf(END);
  if (s < 0 && e < 0) {
    const sep = doc.length === 0 ? '' : doc.endsWith('\n') ? '\n' : '\n\n';
    return `${doc}${sep}${START}\n${body}${END}\n`;
  }
  if (s < 0 || e < 0 || e < s) throw new Error(`BENCHMARKS.md: the markers ${START} and ${END} must both be there, in that order`);
  return `${doc.slice(0, s)}${START}\n${body}${doc.slice(e)}`;
}
