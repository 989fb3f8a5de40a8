;;; test-lsp-mode.el --- End-to-end check of diffusion-lsp.el with lsp-mode  -*- lexical-binding: t; -*-

;;; Commentary:

;; emacs -Q --batch -l test-lsp-mode.el
;; Registers the real server (DIFFUSION_LSP, else diffusion-lsp on PATH, else the
;; repository's .venv/bin/diffusion-lsp) through `diffusion-lsp-lsp-mode-setup', waits for
;; diffusion/status "ready", asks for a completion at "return " and checks that an item came
;; back and that the drafts sent meanwhile were painted and then cleared; then that the drafts of
;; a request whose buffer changed meanwhile are not painted, that an item's range after an
;; emoji covers the typed word, that a buffer with a carriage return inside a line (a line break
;; to LSP, not to Emacs) gets no suggestion, draft, action or server edit, with the line named,
;; and that edits made while it held one reached the server's copy as made; last, that killing the server
;; clears its draft and the mode line's ready.  Exits non-zero on failure; skips when lsp-mode
;; is not installed.

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

(defun test-item-regions ()
  "The buffer regions the completion items at point replace, one per item."
  (let* ((response (lsp-request "textDocument/completion" (lsp--text-document-position-params)))
         (items (and response (append (lsp-get response :items) nil))))
    (mapcar (lambda (item)
              (let ((range (lsp-get (lsp-get item :textEdit) :range)))
                (cons (lsp--position-to-point (lsp-get range :start))
                      (lsp--position-to-point (lsp-get range :end)))))
            items)))

(defun test-replaces-typed-word (regions)
  "Do all REGIONS replace exactly the three characters typed before point?"
  (and regions (cl-every (lambda (region) (equal region (cons (- (point) 3) (point)))) regions)))

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
        ;; The embedded model is weak: without validation, the confidence bar and the names rule
        ;; it always proposes something.
        diffusion-lsp-settings '(:validate :json-false :minConfidence 0 :draftIntervalMs 0
                                 :namesRule :json-false))
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
  ;; A draft computed for a version the buffer has moved past is not painted: the user types a
  ;; line above while the fill runs, and the drafts the server had already sent for the old text
  ;; (its range on the old lines) arrive after the change.
  (let ((stale 0) (first nil) (done nil))
    (advice-add 'diffusion-lsp--lsp-mode-draft :after
                (lambda (_workspace params)
                  (setq first t)
                  (when (eq (diffusion-lsp--get params "done") t) (setq done t))
                  (when (and (overlayp diffusion-lsp--draft-overlay)
                             (not (equal (diffusion-lsp--get params "version") lsp--cur-version)))
                    (setq stale (1+ stale))))
                '((name . test-stale)))
    (lsp-request-async "textDocument/completion" (lsp--text-document-position-params) #'ignore)
    (let ((deadline (+ (float-time) 120)))
      (while (and (not first) (< (float-time) deadline)) (accept-process-output nil 0.05)))
    ;; Read nothing for a second, as a busy Emacs does, while the server sends the next drafts.
    (let ((until (+ (float-time) 1.0))) (while (< (float-time) until)))
    (save-excursion (goto-char (point-min)) (insert "import os\n"))
    (let ((deadline (+ (float-time) 120)))
      (while (and (not done) (< (float-time) deadline)) (accept-process-output nil 0.05)))
    (advice-remove 'diffusion-lsp--lsp-mode-draft 'test-stale)
    (test-check (and first done) "drafts of a request whose buffer changed came back")
    (test-check (= stale 0)
                (format "no draft painted for a version the buffer moved past (%d painted)" stale)))
  ;; Positions after an astral character (an emoji: one Emacs character, two UTF-16 code units):
  ;; the item's edit replaces exactly the word typed before the cursor.
  (goto-char (point-max))
  (insert "\ntotal = 1\nprint(\"\U0001F600\", tot")
  (let ((regions (test-item-regions)))
    (test-check (test-replaces-typed-word regions)
                (format "after an emoji the items replace the typed word %S (got %S)"
                        (cons (- (point) 3) (point)) regions)))
  ;; A carriage return inside a line is a line break to the server (LSP) and none to Emacs: changes
  ;; made while the buffer holds one go as the whole text, so that the server's copy stays the
  ;; buffer's (in Emacs's line numbers, a line inserted below the \r went in a line too high and
  ;; the deletion of the \r itself was clamped to nothing).
  (let ((main (current-buffer)) (cr-file (expand-file-name "stray_cr.py" dir)))
    (with-temp-file cr-file
      (insert "def a(s):\n    t = \"x\ry\"\n    def inner():\n        ...\n    return t\n\n\ntotal = 1\nvalue = tot\n"))
    (find-file cr-file)
    (python-mode)
    (lsp)
    ;; While it holds the \r: no suggestion, no draft, no action, no server edit; the user is told which
    ;; line.  ("Fill holes" replaced '    return' below the hole with the fill meant for the '...',
    ;; its drafts painted there first.)
    (let ((before (buffer-string)) (painted 0) completion actions applied)
      (advice-add 'diffusion-lsp--lsp-mode-draft :after
                  (lambda (&rest _) (when (overlayp diffusion-lsp--draft-overlay) (setq painted (1+ painted))))
                  '((name . test-cr)))
      (goto-char (point-min))
      (search-forward "return t")
      (setq completion (condition-case err
                           (lsp-request "textDocument/completion" (lsp--text-document-position-params))
                         (user-error (cadr err))))
      (setq actions (condition-case err
                        (lsp-request "textDocument/codeAction"
                                     (list :textDocument (lsp--text-document-identifier)
                                           :range (lsp--region-to-range (point-min) (point-max))
                                           :context (list :diagnostics [])))
                      (user-error (cadr err))))
      (unless (stringp actions)
        (when-let ((fill (seq-find (lambda (a) (string-prefix-p "Fill" (lsp-get a :title))) actions)))
          (ignore-errors (lsp-execute-code-action fill))))
      (let ((deadline (+ (float-time) 10)))  ; a server edit would be here by now
        (while (and (equal (buffer-string) before) (< (float-time) deadline)) (accept-process-output nil 0.05)))
      (advice-remove 'diffusion-lsp--lsp-mode-draft 'test-cr)
      ;; The server asks for an edit of it (as its actions do): answered not applied.
      (let ((id 900000))
        (advice-add 'lsp--send-request-response :around
                    (lambda (send workspace recv-time request response)
                      (if (equal (lsp-get request :id) id) (setq applied response)
                        (funcall send workspace recv-time request response)))
                    '((name . test-cr)))
        (lsp--on-request (car (lsp-workspaces))
                         (lsp--read-json
                          (json-encode
                           `((jsonrpc . "2.0") (id . ,id) (method . "workspace/applyEdit")
                             (params . ((edit . ((documentChanges
                                                  . [((textDocument . ((uri . ,(lsp--path-to-uri buffer-file-name))
                                                                       (version . nil)))
                                                      (edits . [((range . ((start . ((line . 4) (character . 0)))
                                                                           (end . ((line . 4) (character . 4)))))
                                                                 (newText . "XXXX"))]))])))))))))
        (advice-remove 'lsp--send-request-response 'test-cr))
      (test-check (equal (buffer-string) before)
                  "a buffer holding a carriage return inside a line: completion, fill holes and a server edit changed nothing")
      (test-check (and (stringp completion) (string-match-p "line 2 holds a carriage return" completion)
                       (stringp actions))
                  (format "completion and code actions say which line holds it (%S, %S)"
                          completion (if (stringp actions) actions (length actions))))
      (test-check (= painted 0) (format "no draft painted in that buffer (%d)" painted))
      (test-check (and (consp applied) (eq (plist-get applied :applied) :json-false))
                  (format "a diffusion-lsp edit of that buffer is answered not applied (%S)" applied)))
    (goto-char (point-min))
    (search-forward "total = 1")
    (beginning-of-line)
    (insert "# note\n")
    (goto-char (point-min))
    (search-forward "\r")
    (delete-char -1)
    (insert " ")
    (goto-char (point-min))
    (search-forward "value = tot")
    (let ((regions (test-item-regions)))
      (test-check (test-replaces-typed-word regions)
                  (format "edits made while the buffer held a carriage return reached the server: the items replace the typed word %S (got %S)"
                          (cons (- (point) 3) (point)) regions)))
    (set-buffer-modified-p nil)
    (switch-to-buffer main))
  ;; The server dies while a draft is painted: the draft goes, and the mode line no longer says ready.
  (let ((painted nil) (proc (lsp--workspace-proc (car (lsp-workspaces)))))
    (advice-add 'diffusion-lsp--lsp-mode-draft :after
                (lambda (&rest _) (when (overlayp diffusion-lsp--draft-overlay) (setq painted t)))
                '((name . test-crash)))
    (goto-char (point-min))
    (search-forward "return ")
    (lsp-request-async "textDocument/completion" (lsp--text-document-position-params) #'ignore)
    (let ((deadline (+ (float-time) 120)))
      (while (and (not painted) (< (float-time) deadline)) (accept-process-output nil 0.05)))
    (advice-remove 'diffusion-lsp--lsp-mode-draft 'test-crash)
    (test-check painted "a draft is painted before the server is killed")
    (signal-process proc 'kill)
    (let ((deadline (+ (float-time) 30)))
      (while (and (process-live-p proc) (< (float-time) deadline)) (accept-process-output nil 0.05)))
    (accept-process-output nil 0.5)
    (test-check (not (overlayp diffusion-lsp--draft-overlay)) "the killed server's draft is cleared")
    (test-check (not (equal (car diffusion-lsp-state) "ready"))
                (format "the mode line no longer says ready after the server died (%S)" diffusion-lsp-state)))
  (set-buffer-modified-p nil)
  (ignore-errors (lsp-workspace-shutdown (car (lsp-workspaces))))
  (princ (format "%d passed, %d failed\n" test-passes test-failures))
  (kill-emacs (if (> test-failures 0) 1 0)))

;;; test-lsp-mode.el ends here
