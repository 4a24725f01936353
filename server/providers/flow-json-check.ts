// The provider's rules for Flow JSON that a form's Flow can break, checked the way Meta's
// validator reports them (`validation_errors`): the sandbox and the fake Cloud API use it, so a
// Flow the sandbox accepts is one the provider would accept too. Not the whole Flow JSON
// reference: the components forms generate, and the structure every Flow needs.

/** Label limits of the input components (characters), as the Flow JSON reference gives them. */
export const FLOW_LABEL_LIMITS: Record<string, number> = {
  TextInput: 20,
  TextArea: 20,
  DatePicker: 40,
  Dropdown: 20,
  RadioButtonsGroup: 30,
  CheckboxGroup: 30,
  OptIn: 120,
  Footer: 35,
};
export const FLOW_HELPER_TEXT_LIMIT = 80;
export const FLOW_MAX_COMPONENTS = 50;
export const FLOW_OPTION_TITLE_LIMIT = 30;
const SCREEN_ID = /^[A-Z][A-Z_]*$/;
const INPUT_TYPES = new Set(['text', 'number', 'email', 'password', 'passcode', 'phone']);

export interface FlowValidationError {
  error: string;
  message: string;
  path: string;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export function validateFlowJson(text: string): FlowValidationError[] {
  const errors: FlowValidationError[] = [];
  const fail = (path: string, message: string, error = 'INVALID_PROPERTY_VALUE') => errors.push({ error, message, path });
  let flow: unknown;
  try {
    flow = JSON.parse(text);
  } catch {
    return [{ error: 'INVALID_JSON', message: 'The Flow JSON is not valid JSON.', path: '' }];
  }
  if (!isObject(flow)) return [{ error: 'INVALID_JSON', message: 'The Flow JSON must be an object.', path: '' }];
  if (typeof flow.version !== 'string' || !/^\d+\.\d+$/.test(flow.version)) fail('version', 'version is required, e.g. "7.0".', 'MISSING_REQUIRED_PROPERTY');
  const screens = flow.screens;
  if (!Array.isArray(screens) || screens.length === 0) {
    fail('screens', 'At least one screen is required.', 'MISSING_REQUIRED_PROPERTY');
    return errors;
  }
  const ids = new Set<string>();
  let terminal = 0;
  screens.forEach((screen, i) => {
    const at = `screens[${i}]`;
    if (!isObject(screen)) return fail(at, 'A screen must be an object.');
    const id = String(screen.id ?? '');
    if (!SCREEN_ID.test(id) || id === 'SUCCESS') fail(`${at}.id`, `Screen id "${id}" must be upper-case letters and underscores, and not SUCCESS.`);
    if (ids.has(id)) fail(`${at}.id`, `Screen id "${id}" is used twice.`);
    ids.add(id);
    const layout = screen.layout;
    if (!isObject(layout) || layout.type !== 'SingleColumnLayout' || !Array.isArray(layout.children))
      return fail(`${at}.layout`, 'layout must be a SingleColumnLayout with children.');
    const flat: Json[] = [];
    for (const c of layout.children) {
      if (isObject(c) && c.type === 'Form' && Array.isArray(c.children)) flat.push(...c.children.filter(isObject));
      else if (isObject(c)) flat.push(c);
    }
    if (flat.length > FLOW_MAX_COMPONENTS) fail(`${at}.layout`, `A screen holds at most ${FLOW_MAX_COMPONENTS} components.`);
    const names = new Set<string>();
    let footer: Json | undefined;
    flat.forEach((c, j) => {
      const path = `${at}.layout.children[${j}]`;
      const type = String(c.type);
      if (type === 'Footer') footer = c;
      if (typeof c.name === 'string') {
        if (names.has(c.name)) fail(`${path}.name`, `Component name "${c.name}" is used twice on screen ${id}.`);
        names.add(c.name);
      }
      const limit = FLOW_LABEL_LIMITS[type];
      if (limit !== undefined && (typeof c.label !== 'string' || c.label.length === 0 || [...c.label].length > limit))
        fail(`${path}.label`, `${type} label must have 1 to ${limit} characters.`);
      if (typeof c['helper-text'] === 'string' && [...c['helper-text']].length > FLOW_HELPER_TEXT_LIMIT)
        fail(`${path}.helper-text`, `helper-text has at most ${FLOW_HELPER_TEXT_LIMIT} characters.`);
      if (type === 'TextInput' && c['input-type'] !== undefined && !INPUT_TYPES.has(String(c['input-type'])))
        fail(`${path}.input-type`, `Unknown input-type "${String(c['input-type'])}".`);
      if (['Dropdown', 'RadioButtonsGroup', 'CheckboxGroup'].includes(type)) {
        const source = c['data-source'];
        if (!Array.isArray(source) || source.length === 0) fail(`${path}.data-source`, `${type} needs a non-empty data-source.`);
        else
          source.forEach((o, k) => {
            if (!isObject(o) || typeof o.id !== 'string' || typeof o.title !== 'string' || [...o.title].length > FLOW_OPTION_TITLE_LIMIT)
              fail(`${path}.data-source[${k}]`, `Each option needs an id and a title of at most ${FLOW_OPTION_TITLE_LIMIT} characters.`);
          });
      }
    });
    if (screen.terminal === true) {
      terminal++;
      const action = isObject(footer?.['on-click-action']) ? (footer!['on-click-action'] as Json) : undefined;
      if (!footer || action?.name !== 'complete')
        fail(`${at}`, `Terminal screen ${id} needs a Footer whose on-click-action is complete.`, 'MISSING_REQUIRED_PROPERTY');
    }
  });
  if (!terminal) fail('screens', 'At least one screen must be terminal.', 'MISSING_REQUIRED_PROPERTY');
  return errors;
}
