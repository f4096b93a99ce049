;;; capture_eglot.el --- load the eglot snippet $SNIPPET, print what it adds  -*- lexical-binding: t; -*-
;; Emacs 29 ships eglot; older ones get a stand-in list, and `provide' runs the snippet's
;; with-eval-after-load as loading eglot would (at the end of loading this file: print
;; with --eval "(capture-eglot-print)" after it).
(require 'json)
(defvar eglot-server-programs nil)
(load (getenv "SNIPPET") nil t)
(provide 'eglot)

(defun capture-eglot-print ()
  "Print the entry the snippet added to `eglot-server-programs', as JSON."
  (let ((entry (car eglot-server-programs)))
    (princ (json-encode (list (cons "modes" (car entry)) (cons "command" (cdr entry)))))))
