;;; acp-agent-eglot.el --- acp-agent as a language server in Emacs with eglot  -*- lexical-binding: t; -*-
;; Put in your init file. M-x eglot in a Python buffer starts it; eglot-code-actions
;; offers "Fix this problem" and "Explain this".
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '((python-mode python-ts-mode) . ("/absolute/path/to/acp-agent/.venv/bin/acp-agent" "lsp"))))
