// jsdom lays nothing out and has no ResizeObserver (the window's width is bound through one): one
// that never reports, as a window that is never resized.
class NoResize {
  observe() {}
  unobserve() {}
  disconnect() {}
}
globalThis.ResizeObserver ??= NoResize as unknown as typeof ResizeObserver;
