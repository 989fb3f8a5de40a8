;;; test-eglot.el --- End-to-end check of diffusion-lsp.el with eglot  -*- lexical-binding: t; -*-

;;; Commentary:

;; emacs -Q --batch -l test-eglot.el
;; Starts the real server (DIFFUSION_LSP, else diffusion-lsp on PATH, else the
;; repository's .venv/bin/diffusion-lsp) through
;; `diffusion-lsp-eglot-setup', waits for diffusion/status "ready", then runs
;; completion-at-point after "return " and checks that the server's fill was inserted
;; there and nothing else changed; then on the empty line of an `if' body (a block fill
;; inserted as sent leaves no empty line after it) and after a typed word (eglot keeps the
;; items that start with it); then that a buffer with a carriage return inside a line (a line
;; break to LSP, not to Emacs) gets no suggestion, action or server edit, with the line named,
;; and that edits made while it held one reached the server's copy as made; last, that the mode line
;; no longer says ready once the server is shut down.  Exits non-zero on failure.  Needs eglot
;; (Emacs 29+, or Debian's elpa-eglot).

;;; Code:

(require 'package)
(let ((package-user-dir (make-temp-file "diffusion-lsp-elpa" t)))
  (setq package-directory-list (append '("/usr/share/emacs/site-lisp/elpa") package-directory-list))
  (package-initialize))
(add-to-list 'load-path (file-name-directory (or load-file-name buffer-file-name)))
(require 'diffusion-lsp)
;; A fill on a busy machine (CI runs the tests on 2 loaded cores) can take longer than jsonrpc's 10 s default,
;; after which eglot's synchronous completion request gives up and returns nothing.
(require 'jsonrpc)
(setq jsonrpc-default-request-timeout 120)

(defvar test-failures 0)
(defvar test-passes 0)

(defun test-check (ok what)
  "Count OK as a pass or a failure named WHAT."
  (if ok
      (progn (setq test-passes (1+ test-passes)) (princ (format "ok   %s\n" what)))
    (setq test-failures (1+ test-failures))
    (princ (format "FAIL %s\n" what))))

(defun test-wait (seconds predicate)
  "Process output until PREDICATE holds or SECONDS pass; return its value."
  (let ((deadline (+ (float-time) seconds)) value)
    (while (and (not (setq value (funcall predicate))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    value))

(unless (require 'eglot nil t)
  (princ "skip: eglot is not installed\n")
  (kill-emacs 0))

(defconst test-repo-server
  (expand-file-name "../../.venv/bin/diffusion-lsp"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "The server of the repository's virtual environment.")

(let* ((server (or (getenv "DIFFUSION_LSP") (executable-find "diffusion-lsp")
                   (and (file-executable-p test-repo-server) test-repo-server)))
       (dir (make-temp-file "diffusion-lsp-eglot" t))
       (file (expand-file-name "example.py" dir)))
  (unless server
    (princ "FAIL diffusion-lsp not found (set DIFFUSION_LSP)\n0 passed, 1 failed\n")
    (kill-emacs 1))
  (setq diffusion-lsp-command (list server)
        ;; The embedded model is weak: without validation, the confidence bar and the names rule
        ;; it always proposes something; one item, so that completion-at-point inserts it.  No
        ;; workspace lines: whether the folder was counted before a fill (a race) would change
        ;; what the fills write, and the later checks depend on the earlier fills' text.
        diffusion-lsp-settings '(:validate :json-false :minConfidence 0 :maxAlternatives 1
                                 :workspaceLines :json-false :namesRule :json-false))
  (with-temp-file file
    (insert "def read_lines(path):\n    with open(path) as handle:\n        return \n\n\nprint(1)\n"
            "\n\ndef check(x):\n    if x is None:\n        \n    return x\n\n\ntotal = 1\nvalue = tot\n"))
  (find-file file)
  (python-mode)
  (diffusion-lsp-eglot-setup)
  (setq eglot-sync-connect t)
  (apply #'eglot (eglot--guess-contact))
  (test-check (eglot-current-server) "eglot connected to diffusion-lsp")
  (test-wait 300 (lambda () (member (car diffusion-lsp-state) '("ready" "error"))))
  (test-check (equal (car diffusion-lsp-state) "ready")
              (format "diffusion/status reached ready (%S)" diffusion-lsp-state))
  (test-check (string-match-p "diffusion:ready" (or (diffusion-lsp-mode-line) ""))
              "the mode line shows the state")
  (let ((before (buffer-string)) inserted)
    (goto-char (point-min))
    (search-forward "return ")
    (let ((start (point)))
      (dotimes (_ 3)
        (unless inserted
          (completion-at-point)
          (test-wait 20 (lambda () (not (equal (buffer-string) before))))
          (setq inserted (not (equal (buffer-string) before)))))
      (test-check inserted "completion-at-point inserted the server's fill")
      (when inserted
        (test-check (equal (buffer-substring (point-min) start) (substring before 0 (1- start)))
                    "text before the cursor unchanged")
        (test-check (string-suffix-p (substring before (1- start)) (buffer-string))
                    "text after the cursor unchanged"))))
  ;; A block fill on an empty line: the line's own break ends it, no empty line after it.
  (goto-char (point-min))
  (search-forward "if x is None:\n        ")
  (let* ((start (point)) (tail (buffer-substring start (point-max))) (before (buffer-string)))
    (completion-at-point)
    (test-wait 20 (lambda () (not (equal (buffer-string) before))))
    (let ((inserted (and (string-suffix-p tail (buffer-string))
                         (buffer-substring start (- (point-max) (length tail))))))
      (test-check (and inserted (> (length inserted) 0) (not (string-suffix-p "\n" inserted)))
                  (format "a block fill leaves no empty line after it (%S)" inserted))))
  ;; After a typed word: eglot keeps the items that start with it.
  (goto-char (point-min))
  (search-forward "value = tot")
  ;; eglot sends the block's change from an idle timer, which batch mode never runs: send it now
  (eglot--signal-textDocument/didChange)
  (let ((found (all-completions "tot" (nth 2 (eglot-completion-at-point)))))
    (test-check (and found (cl-every (lambda (c) (string-prefix-p "tot" c)) found))
                (format "the item after a typed word starts with it (%S)" (mapcar #'substring-no-properties found))))
  ;; A carriage return inside a line is a line break to the server (LSP) and none to Emacs: changes
  ;; made while the buffer holds one go as the whole text, so that the server's copy stays the
  ;; buffer's (in Emacs's line numbers, a line inserted below the \r went in a line too high and
  ;; the deletion of the \r itself was clamped to nothing).
  (let ((main (current-buffer)) (cr-file (expand-file-name "stray_cr.py" dir)))
    (with-temp-file cr-file
      (insert "def a(s):\n    t = \"x\ry\"\n    def inner():\n        ...\n    return t\n\n\ntotal = 1\nvalue = tot\n"))
    (find-file cr-file)
    (test-wait 20 (lambda () (eglot-current-server)))
    ;; While it holds the \r: no suggestion, no action, no server edit; the user is told which line.
    ;; ("Fill holes" replaced '    return' below the hole with the fill meant for the '...'.)
    (let ((before (buffer-string)) (eglot-confirm-server-initiated-edits nil) refusal applied)
      (goto-char (point-min))
      (search-forward "return t")
      (completion-at-point)
      (setq refusal (condition-case err
                        (progn (eglot-code-actions (point-min) (point-max) "refactor.rewrite.fillHoles" t) nil)
                      (user-error (cadr err))))
      (test-wait 10 (lambda () (not (equal (buffer-string) before))))  ; a server edit would be here by now
      (setq applied (condition-case err
                        (eglot-handle-request
                         (eglot-current-server) 'workspace/applyEdit
                         :edit `(:documentChanges
                                 [(:textDocument (:uri ,(eglot--path-to-uri buffer-file-name) :version nil)
                                   :edits [(:range (:start (:line 4 :character 0) :end (:line 4 :character 4))
                                            :newText "XXXX")])]))
                      (error err)))
      (test-check (equal (buffer-string) before)
                  "a buffer holding a carriage return inside a line: completion, fill holes and a server edit changed nothing")
      (test-check (and (stringp refusal) (string-match-p "line 2 holds a carriage return" refusal))
                  (format "the action says which line holds it (%S)" refusal))
      (test-check (eq (plist-get applied :applied) :json-false)
                  (format "a diffusion-lsp edit of that buffer is answered not applied (%S)" applied)))
    (goto-char (point-min))
    (search-forward "total = 1")
    (beginning-of-line)
    (insert "# note\n")
    (eglot--signal-textDocument/didChange)
    (goto-char (point-min))
    (search-forward "\r")
    (delete-char -1)
    (insert " ")
    (eglot--signal-textDocument/didChange)
    (goto-char (point-min))
    (search-forward "value = tot")
    (let* ((response (jsonrpc-request (eglot--current-server-or-lose) :textDocument/completion
                                      (eglot--TextDocumentPositionParams)))
           (items (append (if (vectorp response) response (plist-get response :items)) nil))
           (regions (mapcar (lambda (item) (eglot--range-region (plist-get (plist-get item :textEdit) :range)))
                            items)))
      (test-check (and regions (cl-every (lambda (region) (equal region (cons (- (point) 3) (point)))) regions))
                  (format "edits made while the buffer held a carriage return reached the server: the items replace the typed word %S (got %S)"
                          (cons (- (point) 3) (point)) regions)))
    (set-buffer-modified-p nil)
    (switch-to-buffer main))
  ;; Shut down, the server is gone: the mode line no longer says ready.
  (set-buffer-modified-p nil)
  (ignore-errors (eglot-shutdown (eglot-current-server)))
  (test-wait 10 (lambda () (not (equal (car diffusion-lsp-state) "ready"))))
  (test-check (not (equal (car diffusion-lsp-state) "ready"))
              (format "the mode line no longer says ready once the server is shut down (%S)" diffusion-lsp-state))
  (princ (format "%d passed, %d failed\n" test-passes test-failures))
  (kill-emacs (if (> test-failures 0) 1 0)))

;;; test-eglot.el ends here
