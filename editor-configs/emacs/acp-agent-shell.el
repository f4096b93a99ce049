;;; acp-agent-shell.el --- acp-agent for agent-shell  -*- lexical-binding: t; -*-

;; acp-agent in Emacs through agent-shell (https://github.com/xenodium/agent-shell).
;; Load this from your init file, replace the path with the absolute path of the
;; `acp-agent' script inside your clone's virtual environment (or with "acp-agent"
;; once it is installed as a tool), then run `M-x acp-agent-shell'.

(require 'agent-shell)

(defun acp-agent-shell-config ()
  "Return an agent-shell configuration that starts acp-agent."
  (agent-shell-make-agent-config
   :identifier 'acp-agent
   :mode-line-name "acp-agent"
   :buffer-name "acp-agent"
   :shell-prompt "acp-agent> "
   :shell-prompt-regexp "acp-agent> "
   :client-maker (lambda (buffer)
                   (acp-make-client
                    :command "/absolute/path/to/acp-agent/.venv/bin/acp-agent"
                    :command-params '()
                    ;; Added to Emacs's own environment, which the agent inherits: an
                    ;; ANTHROPIC_API_KEY exported before Emacs started (or set with
                    ;; `setenv') reaches it too.
                    :environment-variables '("ACP_AGENT_MODEL=anthropic/claude-sonnet-4-5")
                    :context-buffer buffer))))

(defun acp-agent-shell ()
  "Start an agent-shell talking to acp-agent."
  (interactive)
  (agent-shell-start :config (acp-agent-shell-config)))

(provide 'acp-agent-shell)

;;; acp-agent-shell.el ends here
