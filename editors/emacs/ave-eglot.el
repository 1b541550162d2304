;;; ave-eglot.el --- Ave's language server (ave-lsp) for Python buffers, with eglot  -*- lexical-binding: t; -*-

;; Load it from your init file (Emacs 28 with the eglot package, or Emacs 29+):
;;
;;   (load "/path/to/ave/editors/emacs/ave-eglot.el")
;;   (add-hook 'python-mode-hook #'eglot-ensure)     ; or M-x eglot in a Python buffer
;;
;; Then a Python file that imports ave_core.lang is checked when it is opened and saved;
;; Ave's findings appear as Flymake diagnostics ("ave [AVE201]: assert_conform violated:
;; ..."): M-x flymake-show-buffer-diagnostics lists them, M-n/M-p (with your bindings to
;; flymake-goto-next-error) move between them, M-x eglot-code-actions on one offers
;; "Suppress AVEnnn on this line", and eldoc shows the hover (dtype, shape, layout).
;;
;; Eglot runs ONE server per major mode and project: with this file, eglot's server for
;; Python buffers is ave-lsp (instead of pylsp/pyright). To keep another Python server
;; too, run both behind an LSP multiplexer, or use lsp-mode (which allows add-on
;; servers); see docs/editors.md.
;;
;; Tested in batch mode with Debian's emacs-nox 28.2 + elpa-eglot 1.9
;; (tests/editors/test_emacs_eglot.py loads this file unchanged).

;;; Code:

(require 'eglot)

(defgroup ave-eglot nil
  "Ave's language server in eglot."
  :group 'eglot
  :prefix "ave-eglot-")

(defcustom ave-eglot-server-command '("ave-lsp")
  "The command that starts the server, a list: program and arguments.
E.g. (\"/path/to/venv/bin/python\" \"-m\" \"ave_lsp\") for a virtual environment."
  :type '(repeat string))

(defcustom ave-eglot-settings nil
  "The \"ave\" settings section sent to the server (docs/lsp.md), a plist.
Keys: :checkOnChange (t or :json-false), :tripCountBound, :solverTimeoutMs,
:maxFileLines (integers), :baseline (a path).  A key left out (or :null) is not set:
the [tool.ave] table of the project's pyproject.toml, else the default, applies
(the default, nil, sets none: a value set here overrides the project's).
Set it before loading this file, or per project with `eglot-workspace-configuration'
in .dir-locals.el:  ((python-mode . ((eglot-workspace-configuration
                                       . (:ave (:checkOnChange t))))))"
  :type 'plist)

(defconst ave-eglot-install-command "python3 -m pip install -e /path/to/ave"
  "How to install the server (into the Python environment of the project): from a
checkout of Ave, /path/to/ave standing for its path. Ave is not on PyPI (the `ave'
there is another project).")

(defun ave-eglot--contact (&optional _interactive)
  "The server command for `eglot-server-programs'; a clear error when it is missing."
  (let ((program (car ave-eglot-server-command)))
    (unless (and program (executable-find program))
      (user-error "ave-eglot: %s not found: install Ave's server with `%s', or set `ave-eglot-server-command'"
                  (or program "(no command)") ave-eglot-install-command))
    ave-eglot-server-command))

;; Python buffers (python-mode, and Emacs 29's python-ts-mode) get ave-lsp.
(add-to-list 'eglot-server-programs
             '((python-mode python-ts-mode) . ave-eglot--contact))

;; The "ave" section of workspace/configuration, added to what is configured already.
(let ((conf (default-value 'eglot-workspace-configuration)))
  (cond ((functionp conf)
         (display-warning 'ave-eglot "eglot-workspace-configuration is a function: add (:ave ...) to what it returns"))
        ((and (consp conf) (consp (car conf)))   ; the older alist form
         (setq-default eglot-workspace-configuration
                       (cons (cons :ave ave-eglot-settings)
                             (assq-delete-all :ave (copy-sequence conf)))))
        (t
         (setq-default eglot-workspace-configuration
                       (plist-put (copy-sequence conf) :ave ave-eglot-settings)))))

(provide 'ave-eglot)
;;; ave-eglot.el ends here
