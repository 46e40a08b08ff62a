/** JUnit XML for CI systems: one test suite per checked document, one test case per operation. */

export interface JunitCase {
  name: string;
  classname: string;
  /** Empty when the case passed. */
  failures: string[];
  /** Requests sent for it (a property, and the reason a case with none is skipped). */
  requests: number;
}

const escape = (text: string): string =>
  text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    // Control characters are not allowed in XML 1.0.
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '?');

export function junitXml(suite: string, cases: JunitCase[], seconds: number): string {
  const failed = cases.filter((c) => c.failures.length > 0).length;
  const skipped = cases.filter((c) => c.requests === 0).length;
  const body = cases.map((c) => {
    const open = `    <testcase name="${escape(c.name)}" classname="${escape(c.classname)}">`;
    const properties = `      <properties><property name="requests" value="${c.requests}"/></properties>`;
    if (c.failures.length > 0) {
      const text = escape(c.failures.join('\n'));
      return `${open}\n${properties}\n      <failure message="${escape(c.failures[0]!.slice(0, 200))}">${text}</failure>\n    </testcase>`;
    }
    if (c.requests === 0) return `${open}\n${properties}\n      <skipped message="no request could be built"/>\n    </testcase>`;
    return `${open}\n${properties}\n    </testcase>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="contract-check" tests="${cases.length}" failures="${failed}" time="${seconds.toFixed(3)}">`,
    `  <testsuite name="${escape(suite)}" tests="${cases.length}" failures="${failed}" skipped="${skipped}" time="${seconds.toFixed(3)}">`,
    ...body,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
