// state.js - what every screen shares: the signed-in user, their
// organizations, the chosen organization and environment (kept in
// localStorage across reloads), and the environments of the organization.
export const state = {
  me: null,
  orgs: [],
  org: null, // slug
  role: null,
  environments: [],
  env: null, // key
  flags: null, // the last flags list, for the palette
};

export function remember(name, value) {
  try { localStorage.setItem(`ensign.${name}`, value); } catch { /* private mode */ }
}

export function recall(name) {
  try { return localStorage.getItem(`ensign.${name}`); } catch { return null; }
}
