;;; test-lsp-mode.el --- End-to-end check of diffusion-lsp.el with lsp-mode  -*- lexical-binding: t; -*-

;;; Commentary:

;; emacs -Q --batch -l test-lsp-mode.el
;; Registers the real server (DIFFUSION_LSP, else diffusion-lsp on PATH, else the
;; repository's .venv/bin/diffusion-lsp) through `diffusion-lsp-lsp-mode-setup', waits for
;; diffusion/status "ready", asks for a completion at "return " and checks that an item came
;; back and that the drafts sent meanwhile were painted and then cleared.  Exits non-zero on
;; failure; skips when lsp-mode is not installed.

;;; Code:

(require 'package)
(setq package-directory-list (append '("/usr/share/emacs/site-lisp/elpa") package-directory-list))
(package-initialize)
(add-to-list 'load-path (file-name-directory (or load-file-name buffer-file-name)))
(require 'diffusion-lsp)
;; A fill on a busy machine can take longer than lsp-mode's 10 s default for a synchronous request
;; (`lsp-response-timeout'), after which `lsp-request' signals a timeout (eglot's test had the same cause).
(require 'lsp-mode nil t)
(setq lsp-response-timeout 120)

(defvar test-failures 0)
(defvar test-passes 0)
(defvar test-drafts-painted 0)
(defvar test-drafts 0)

(defun test-check (ok what)
  "Count OK as a pass or a failure named WHAT."
  (if ok
      (progn (setq test-passes (1+ test-passes)) (princ (format "ok   %s\n" what)))
    (setq test-failures (1+ test-failures))
    (princ (format "FAIL %s\n" what))))

(unless (require 'lsp-mode nil t)
  (princ "skip: lsp-mode is not installed\n")
  (kill-emacs 0))

(defconst test-repo-server
  (expand-file-name "../../.venv/bin/diffusion-lsp"
                    (file-name-directory (or load-file-name buffer-file-name))))

(let* ((server (or (getenv "DIFFUSION_LSP") (executable-find "diffusion-lsp")
                   (and (file-executable-p test-repo-server) test-repo-server)))
       (dir (make-temp-file "diffusion-lsp-lsp-mode" t))
       (file (expand-file-name "example.py" dir)))
  (unless server
    (princ "FAIL diffusion-lsp not found (set DIFFUSION_LSP)\n0 passed, 1 failed\n")
    (kill-emacs 1))
  (setq lsp-auto-guess-root t lsp-enable-file-watchers nil lsp-restart 'ignore
        lsp-session-file (make-temp-file "lsp-session") lsp-keep-workspace-alive nil
        ;; Only diffusion-lsp: no other Python server is wanted in this test.
        lsp-disabled-clients '(pyls pylsp mspyls jedi semgrep-ls ruff-lsp pyright))
  (setq diffusion-lsp-command (list server)
        ;; The embedded model is weak: without validation and the confidence bar it always
        ;; proposes something.
        diffusion-lsp-settings '(:validate :json-false :minConfidence 0 :draftIntervalMs 0))
  (diffusion-lsp-lsp-mode-setup)
  (advice-add 'diffusion-lsp--lsp-mode-draft :after
              (lambda (_workspace params)
                (setq test-drafts (1+ test-drafts))
                (when (and (not (eq (diffusion-lsp--get params "done") t))
                           (overlayp diffusion-lsp--draft-overlay))
                  (setq test-drafts-painted (1+ test-drafts-painted)))))
  (with-temp-file file (insert "def read_lines(path):\n    return \n\n\nprint(1)\n"))
  (find-file file)
  (python-mode)
  (lsp)
  (let ((deadline (+ (float-time) 300)))   ; ends at the status: a bound for a hang only
    (while (and (not (member (car diffusion-lsp-state) '("ready" "error"))) (< (float-time) deadline))
      (accept-process-output nil 0.05)))
  (test-check (equal (car diffusion-lsp-state) "ready")
              (format "diffusion/status reached ready (%S)" diffusion-lsp-state))
  (goto-char (point-min))
  (search-forward "return ")
  (let* ((response (lsp-request "textDocument/completion" (lsp--text-document-position-params)))
         (items (and response (lsp-get response :items))))
    (test-check (> (length items) 0) "the server answered textDocument/completion with an item"))
  (accept-process-output nil 0.3)
  (test-check (> test-drafts-painted 0)
              (format "drafts painted as an overlay (%d of %d drafts)" test-drafts-painted test-drafts))
  (test-check (null diffusion-lsp--draft-overlay) "the draft is cleared after the final one")
  (set-buffer-modified-p nil)
  (ignore-errors (lsp-workspace-shutdown (car (lsp-workspaces))))
  (princ (format "%d passed, %d failed\n" test-passes test-failures))
  (kill-emacs (if (> test-failures 0) 1 0)))

;;; test-lsp-mode.el ends here
