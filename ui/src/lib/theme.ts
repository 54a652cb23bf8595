// The window's theme: app.css keys its colours on <html data-theme>; "system" follows the OS.
import type { Theme } from '../backend';

export function applyTheme(theme: Theme) {
  document.documentElement.dataset.theme = theme;
}
