;;; diagnostics.el --- batch Emacs + eglot as a real LSP client of ave-lsp  -*- lexical-binding: t; -*-

;; emacs --batch -l tests/editors/emacs/diagnostics.el
;;
;; Loads editors/emacs/ave-eglot.el (the file users load, unchanged) with the server
;; command pointed at the test's Python, turns on eglot for Python buffers the way its
;; comment says (eglot-ensure on python-mode-hook), visits the file, then runs the command
;; loop's post-command-hook while waiting -- what an interactive Emacs does between
;; keystrokes, and the window hooks redisplay runs when the buffer is shown -- until Flymake has diagnostics from the server or the deadline passes.
;; Writes them as JSON, shuts the server down and exits.
;; Environment:
;;   AVE_EMACS_SNIPPET    path of editors/emacs/ave-eglot.el
;;   AVE_EMACS_PYTHON     the Python that runs `-m ave_lsp'
;;   AVE_EMACS_FILE       the Python file to visit
;;   AVE_EMACS_OUT        where to write the JSON result
;;   AVE_EMACS_TIMEOUT_S  the deadline (default 60)
;;   AVE_EMACS_SETTINGS   optional: a plist (read as Lisp) for `ave-eglot-settings'

(require 'json)
(require 'subr-x)

(defvar ave-test--out (or (getenv "AVE_EMACS_OUT") (error "AVE_EMACS_OUT is not set")))

(defun ave-test--finish (result status)
  (with-temp-file ave-test--out
    (insert (json-encode result)))
  (kill-emacs status))

(condition-case err
    (progn
      (let ((settings (getenv "AVE_EMACS_SETTINGS")))
        (when (and settings (not (string-empty-p settings)))
          (setq ave-eglot-settings (car (read-from-string settings)))))
      (setq ave-eglot-server-command
            (list (or (getenv "AVE_EMACS_PYTHON") (error "AVE_EMACS_PYTHON is not set"))
                  "-m" "ave_lsp"))
      (load (or (getenv "AVE_EMACS_SNIPPET") (error "AVE_EMACS_SNIPPET is not set")) nil t)
      (add-hook 'python-mode-hook #'eglot-ensure)
      (let* ((deadline (+ (float-time)
                          (string-to-number (or (getenv "AVE_EMACS_TIMEOUT_S") "60"))))
             (start (float-time))
             (buf (find-file-noselect (getenv "AVE_EMACS_FILE")))
             diags server)
        (switch-to-buffer buf)            ; shown in the (batch) frame's window
        (while (and (< (float-time) deadline)
                    (not (setq diags (and (bound-and-true-p flymake-mode)
                                          (flymake-diagnostics)))))
          (with-current-buffer buf
            (run-hooks 'post-command-hook)
            ;; batch Emacs never redisplays: run what redisplay runs when the
            ;; buffer's window appears (Flymake starts its backends -- eglot's --
            ;; once the buffer is shown)
            (run-window-configuration-change-hook))
          (accept-process-output nil 0.05))
        (with-current-buffer buf
          (setq server (eglot-current-server))
          (let* ((items
                  (mapcar
                   (lambda (d)
                     (let ((beg (flymake-diagnostic-beg d))
                           (end (flymake-diagnostic-end d)))
                       `((line . ,(line-number-at-pos beg))
                         (column . ,(save-excursion (goto-char beg) (current-column)))
                         (end_line . ,(line-number-at-pos end))
                         (type . ,(symbol-name (flymake-diagnostic-type d)))
                         (text . ,(flymake-diagnostic-text d)))))
                   diags))
                 (info (and server (eglot--server-info server)))
                 (proc (and server (jsonrpc--process server)))
                 (result
                  `((emacs_version . ,emacs-version)
                    (eglot_version . ,(or (ignore-errors
                                            (package-desc-version
                                             (cadr (assq 'eglot package-alist))))
                                          "unknown"))
                    (mode . ,(symbol-name major-mode))
                    (server_command . ,(and server (vconcat (process-command proc))))
                    (server_name . ,(plist-get info :name))
                    (server_version . ,(plist-get info :version))
                    (server_pid . ,(and proc (process-id proc)))
                    (timed_out . ,(if diags :json-false t))
                    (elapsed_ms . ,(round (* 1000 (- (float-time) start))))
                    (diagnostics . ,(vconcat items)))))
            (when server
              (ignore-errors (eglot-shutdown server)))
            (ave-test--finish result 0)))))
  (error
   (ave-test--finish `((error . ,(error-message-string err))) 3)))
