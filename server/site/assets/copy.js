// A "Copy" button on every code block of a guide: copies the block's text as it is shown.
// Served from this origin (script-src 'self'); the page reads fine without it.
for (const pre of document.querySelectorAll('article pre')) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'copy';
  button.textContent = 'Copy';
  button.setAttribute('aria-label', 'Copy this code');
  button.addEventListener('click', async () => {
    const text = (pre.querySelector('code') ?? pre).textContent ?? '';
    let copied = false;
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch {
      // No clipboard API (an http origin other than localhost): copy through a selection.
      const area = document.createElement('textarea');
      area.value = text;
      area.setAttribute('readonly', '');
      area.style.position = 'fixed';
      area.style.opacity = '0';
      document.body.append(area);
      area.select();
      copied = document.execCommand('copy');
      area.remove();
    }
    button.textContent = copied ? 'Copied' : 'Select and copy';
    setTimeout(() => (button.textContent = 'Copy'), 2000);
  });
  pre.classList.add('has-copy');
  pre.prepend(button);
}
