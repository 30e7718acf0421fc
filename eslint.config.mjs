// Lints the page's script (static/app.js and its modules): make lint runs
// eslint with this configuration.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["static/vendor/", "bin/", "var/", "e2e/", "test-results/", "playwright-report/"] },
  {
    files: ["static/app.js", "static/js/*.js"],
    ...js.configs.recommended,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: globals.browser,
    },
    rules: {
      ...js.configs.recommended.rules,
      eqeqeq: "error",
      "no-var": "error",
      "prefer-const": "error",
      "no-implicit-globals": "error",
      "no-shadow": "error",
      "no-use-before-define": ["error", { functions: false }],
    },
  },
];
