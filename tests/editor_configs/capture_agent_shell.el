;;; capture_agent_shell.el --- Load an agent-shell snippet and print what it starts  -*- lexical-binding: t; -*-

;; Stands in for agent-shell and acp.el, loads the snippet named by $SNIPPET, builds its
;; agent configuration and client the way agent-shell does (the :client-maker called with
;; the shell buffer), and prints them as one JSON object.

(require 'json)

(defvar capture--client nil "The arguments the snippet's :client-maker passed to `acp-make-client'.")

(defun agent-shell-make-agent-config (&rest config)
  "Stand-in: the CONFIG plist as it is."
  config)

(defun acp-make-client (&rest client)
  "Stand-in: remember CLIENT's arguments."
  (setq capture--client client))

(defun agent-shell-start (&rest _)
  "Stand-in: never started here."
  nil)

(provide 'agent-shell)

(load (getenv "SNIPPET") nil t t)

(let ((config (acp-agent-shell-config)))
  (funcall (plist-get config :client-maker) (current-buffer))
  (princ (json-encode
          `(("identifier" . ,(symbol-name (plist-get config :identifier)))
            ("command" . ,(plist-get capture--client :command))
            ("args" . ,(vconcat (plist-get capture--client :command-params)))
            ("environment" . ,(vconcat (plist-get capture--client :environment-variables)))
            ("interactive" . ,(if (commandp 'acp-agent-shell) t :json-false)))))
  (terpri))

;;; capture_agent_shell.el ends here
