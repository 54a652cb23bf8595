import { defineConfig } from 'vitest/config';
import { svelte } from '@sveltejs/vite-plugin-svelte';

export default defineConfig(({ mode }) => ({
  plugins: [svelte()],
  clearScreen: false,
  build: { target: 'es2021', outDir: 'dist', emptyOutDir: true },
  // Tests mount components in jsdom, which needs Svelte's browser build.
  resolve: mode === 'test' ? { conditions: ['browser'] } : undefined,
  test: {
    environment: 'jsdom',
    globals: true,
    include: ['src/**/*.test.ts'],
    setupFiles: ['src/testSetup.ts'],
  },
}));
