import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import diff from 'highlight.js/lib/languages/diff';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import typescript from 'highlight.js/lib/languages/typescript';
import yaml from 'highlight.js/lib/languages/yaml';
import { Marked } from 'marked';

// the languages an agent's messages mostly hold; others are shown plain (the bundle stays small)
for (const [name, language] of Object.entries({ bash, diff, javascript, json, python, typescript, yaml })) {
  hljs.registerLanguage(name, language);
}
hljs.registerAliases(['sh', 'shell', 'console'], { languageName: 'bash' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });

const marked = new Marked({
  gfm: true,
  // a model's single newlines are line breaks, as it meant them
  breaks: true,
  renderer: {
    code({ text, lang }) {
      const language = lang?.trim().split(/\s+/)[0]?.toLowerCase() ?? '';
      const known = language !== '' && hljs.getLanguage(language) !== undefined;
      const body = known ? hljs.highlight(text, { language, ignoreIllegals: true }).value : escapeHtml(text);
      return `<pre class="code-block"><code class="hljs${known ? ` language-${language}` : ''}">${body}</code></pre>\n`;
    },
  },
});

/**
 * What markdown may become: text formatting, lists, tables, quotes, code and links, nothing
 * that loads or runs anything (no images: a model's markdown would make the browser fetch its URLs;
 * no forms, frames, styles or scripts; no event attributes, which DOMPurify strips anyway).
 */
const ALLOWED_TAGS = [
  'p',
  'br',
  'hr',
  'strong',
  'em',
  'del',
  's',
  'code',
  'pre',
  'span',
  'blockquote',
  'ul',
  'ol',
  'li',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'a',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
  'input',
];
const ALLOWED_ATTR = ['href', 'title', 'class', 'align', 'start', 'type', 'checked', 'disabled'];

// links open apart from the console and tell the site nothing; a task list's boxes cannot be ticked
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
  if (node.tagName === 'INPUT') {
    if (node.getAttribute('type') !== 'checkbox') node.remove();
    else node.setAttribute('disabled', '');
  }
});

/**
 * Markdown (a message, a thought, a finish text) as sanitized HTML in a `div.markdown`: parsed
 * with marked (GFM, line breaks kept), code blocks highlighted with highlight.js, then cleaned by
 * DOMPurify with the allowlist above, so no HTML of the model's is ever executed. Links only to
 * http(s) and mailto.
 */
export function markdown(text: string, attributes: Record<string, string> = {}): HTMLDivElement {
  const html = marked.parse(text, { async: false });
  const clean = DOMPurify.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
    RETURN_DOM_FRAGMENT: true,
  });
  const element = document.createElement('div');
  element.className = 'markdown';
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  element.append(clean);
  return element;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
