// What the scripts echo into CI's log from other tools. CI's log reader knows pytest's closing
// line (`===== 3 passed in 1.2s =====`); schemathesis frames its section titles and its closing
// line the same way (`===== 2 warnings in 7.38s =====`), which that reader takes for a pytest run
// that executed no test. Echoed through unframe(), the title stays and its frame becomes dashes.

/** One line of another tool's output, without a pytest-style `=====` frame. */
export function unframe(line) {
  const framed = /^=+ (.+?) =+$/.exec(line);
  return framed ? `-- ${framed[1]} --` : line;
}

/**
 * A writer for a child's stdout chunks that prints whole lines through unframe(); end() prints
 * the last line when the output did not end with a newline.
 */
export function unframedLines(print = console.log) {
  let pending = '';
  return {
    write(chunk) {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop();
      for (const line of lines) print(unframe(line));
    },
    end() {
      if (pending) print(unframe(pending));
      pending = '';
    },
  };
}
