/** Where the server's problems with a version's `resources` are. The API reports them all at the
 * field ["input", "resources"]; each message names its place as the server writes it:
 *   "document 2 (ResourceQuota compute), spec.hard.pods: must be ..."   (documents count from 1)
 *   "document 1 (Namespace x): ..."                                      (the whole document)
 *   "invalid YAML at line 3, column 5: ..."                              (the YAML does not parse)
 *   "must hold at least one Kubernetes manifest"                         (the whole field)
 */
export interface ResourceProblem {
  /** 1-based, as the message counts documents. */
  document?: number;
  /** "Kind name" of the object, as written in the template. */
  object?: string;
  /** Inside the document: "spec.containers[0].image". */
  path?: string;
  /** 1-based line and column (YAML syntax errors). */
  line?: number;
  column?: number;
  message: string;
}

const DOCUMENT = /^document (\d+)(?: \(([^)]*)\))?(?:, ([^:]+?))?: ([\s\S]*)$/;
const SYNTAX = /^invalid YAML at line (\d+), column (\d+): ([\s\S]*)$/;

export function parseResourceProblem(message: string): ResourceProblem {
  const syntax = SYNTAX.exec(message);
  if (syntax) return { line: Number(syntax[1]), column: Number(syntax[2]), message: syntax[3] };
  const doc = DOCUMENT.exec(message);
  if (doc) {
    return { document: Number(doc[1]), object: doc[2] || undefined, path: doc[3] || undefined, message: doc[4] };
  }
  return { message };
}

export interface DocumentRange {
  /** 0-based line indexes, first and last line of the document's content. */
  start: number;
  end: number;
}

const SEPARATOR = /^---(\s|$)/;
const END = /^\.\.\.(\s|$)/;

/** The non-empty YAML documents of a stream with the lines they span (as the server counts them:
 * documents with nothing but comments or blank lines are skipped). */
export function documentRanges(text: string): DocumentRange[] {
  const lines = text.split("\n");
  const ranges: DocumentRange[] = [];
  let start: number | null = null;
  let end = 0;
  const close = () => {
    if (start !== null) ranges.push({ start, end });
    start = null;
  };
  lines.forEach((line, index) => {
    if (SEPARATOR.test(line)) {
      close();
      // "--- value" starts a document with content on the separator line itself.
      if (line.slice(3).trim() && !line.slice(3).trim().startsWith("#")) {
        start = index;
        end = index;
      }
      return;
    }
    if (END.test(line)) {
      close();
      return;
    }
    const trimmed = line.trim();
    if (trimmed && !trimmed.startsWith("#")) {
      if (start === null) start = index;
      end = index;
    }
  });
  close();
  return ranges;
}

/** The 1-based lines the problems point at: a syntax error's line, or every line of a document. */
export function problemLines(problems: readonly ResourceProblem[], ranges: readonly DocumentRange[]): Set<number> {
  const lines = new Set<number>();
  for (const p of problems) {
    if (p.line) lines.add(p.line);
    else if (p.document) {
      const range = ranges[p.document - 1];
      if (range) for (let i = range.start; i <= range.end; i += 1) lines.add(i + 1);
    }
  }
  return lines;
}
