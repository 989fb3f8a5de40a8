;;; diffusion-lsp.el --- diffusion-lsp in Emacs through eglot or lsp-mode  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "27.1"))
;; Keywords: languages, tools
;; SPDX-License-Identifier: Apache-2.0

;;; Commentary:

;; Registers the diffusion-lsp language server (code infill with a diffusion language
;; model) with eglot or lsp-mode.  Install the server first: scripts/setup.sh in the checkout
;; makes .venv/bin/diffusion-lsp, which this file finds by itself when loaded from that checkout
;; (or put `diffusion-lsp' on PATH, or set `diffusion-lsp-command'), then:
;;
;;   (add-to-list 'load-path "/path/to/diffusion-lsp/editor-clients/emacs")
;;   (require 'diffusion-lsp)
;;
;;   ;; eglot (built into Emacs 29+): completion-at-point offers the fill as one candidate.
;;   (diffusion-lsp-eglot-setup)          ; then M-x eglot in a Python buffer
;;
;;   ;; or lsp-mode: runs beside your usual server (add-on), with ghost text through
;;   ;; lsp-mode's inline completion (lsp-mode 9.0.1+) and drafts painted as they develop.
;;   (diffusion-lsp-lsp-mode-setup)       ; then M-x lsp
;;
;; Server settings (docs/PROTOCOL.md) go in `diffusion-lsp-settings' as a plist, e.g.
;;   (setq diffusion-lsp-settings '(:model "/models/dgemma" :device "cuda" :steps 8))
;; Use :json-false for false.  They are sent as initializationOptions and, with eglot,
;; as the "diffusionLsp" section of the workspace configuration.
;;
;; Keys (lsp-mode 9.0.1+ inline completion): `diffusion-lsp-suggest' (bind it, e.g. to
;; C-c d) shows a suggestion; RET accepts, C-g / ESC dismisses, any other key dismisses
;; and acts as usual.  With eglot: M-x completion-at-point (C-M-i), or company / corfu.
;; The mode line names the model state (loading / ready / error; stopped once no
;; diffusion-lsp server runs).  A buffer with a carriage return (^M) inside a line gets no
;; suggestion, draft or action: the server counts it as a line break, Emacs does not.

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(defgroup diffusion-lsp nil
  "Code infill with a diffusion language model."
  :group 'tools
  :prefix "diffusion-lsp-")

(defconst diffusion-lsp--checkout
  (when load-file-name
    (expand-file-name "../.." (file-name-directory load-file-name)))
  "The diffusion-lsp checkout holding this file (in editor-clients/emacs/), or nil.")

(defun diffusion-lsp-default-executable ()
  "The server to start when `diffusion-lsp-command' is not set.
`diffusion-lsp' on `exec-path', else the .venv/bin/diffusion-lsp that
scripts/setup.sh makes in the checkout holding this file, else
~/.local/bin/diffusion-lsp (the link setup.sh makes), else the bare name."
  (or (executable-find "diffusion-lsp")
      (cl-find-if #'file-executable-p
                  (delq nil (list (and diffusion-lsp--checkout
                                       (expand-file-name ".venv/bin/diffusion-lsp" diffusion-lsp--checkout))
                                  (expand-file-name "~/.local/bin/diffusion-lsp"))))
      "diffusion-lsp"))

(defcustom diffusion-lsp-command (list (diffusion-lsp-default-executable))
  "The server command and its arguments.
The default is `diffusion-lsp-default-executable' when this file is loaded."
  :type '(repeat string))

(defcustom diffusion-lsp-settings nil
  "Server settings as a plist, e.g. (:model \"embedded\" :drafts t).
Keys are the ones of docs/PROTOCOL.md; nil leaves every default."
  :type 'plist)

(defcustom diffusion-lsp-major-modes
  '(python-mode python-ts-mode js-mode js-ts-mode typescript-mode typescript-ts-mode
    tsx-ts-mode go-mode go-ts-mode rust-mode rust-ts-mode)
  "Major modes the server is used for."
  :type '(repeat symbol))

(defface diffusion-lsp-draft-high '((t :inherit shadow))
  "Draft tokens the model is confident about (0.8 and up).")
(defface diffusion-lsp-draft-medium '((t :inherit shadow :weight light))
  "Draft tokens of medium confidence (0.4 to 0.8).")
(defface diffusion-lsp-draft-low '((t :inherit shadow :slant italic :weight light))
  "Draft tokens of low confidence (below 0.4).")
(defface diffusion-lsp-draft-masked '((t :inherit shadow :weight ultra-light))
  "Draft slots still masked.")

(defvar diffusion-lsp-state nil
  "The last `diffusion/status' as (STATE MODEL MESSAGE), for the mode line.")

(defun diffusion-lsp--get (params key)
  "KEY of PARAMS, a hash table or a plist (lsp-mode's `lsp-use-plists')."
  (if (hash-table-p params)
      (gethash key params)
    (plist-get params (intern (concat ":" key)))))

(defun diffusion-lsp--status (state model message)
  "Record STATE of MODEL with MESSAGE and show it in the mode line."
  (setq diffusion-lsp-state (list state model message))
  (force-mode-line-update t)
  (when (equal state "error")
    (message "diffusion-lsp: %s" message)))

(defun diffusion-lsp-mode-line ()
  "Mode-line text: the model state, or nothing before the server speaks."
  (when diffusion-lsp-state
    (format " diffusion:%s" (car diffusion-lsp-state))))

(unless (assq 'diffusion-lsp-state mode-line-misc-info)
  (push '(diffusion-lsp-state (:eval (diffusion-lsp-mode-line))) mode-line-misc-info))

(defun diffusion-lsp--settings-with (key value)
  "`diffusion-lsp-settings' with KEY set to VALUE unless the user set it."
  (if (plist-member diffusion-lsp-settings key)
      diffusion-lsp-settings
    (append diffusion-lsp-settings (list key value))))

;;;; Carriage returns

;; LSP ends a line at \n, \r\n or a lone \r; Emacs only at \n.  A \r in the buffer (shown as
;; ^M: a stray one in a unix file, or the \r\n of a file with mixed line endings) makes positions
;; mean other places to the server than to Emacs: below a lone \r every line number is another
;; line, and at a \r before \n a column past it is clamped before it.  The incremental changes
;; eglot and lsp-mode compute in Emacs's lines then land at the wrong place in the server's copy
;; of the buffer, so while the buffer holds a \r each change is sent as the whole text.

(defvar-local diffusion-lsp--cr :unknown
  "Whether the buffer holds a carriage return: t, nil, or :unknown (scan).")

(defvar-local diffusion-lsp--cr-before :unknown
  "`diffusion-lsp--cr' before the change in progress (:unknown: not recorded).")

(defvar-local diffusion-lsp--full-sync nil
  "Non-nil while this file set `lsp-document-sync-method' to send the whole text.")

(defvar lsp-document-sync-method)
(defvar eglot--recent-changes)

(defun diffusion-lsp--holds-cr ()
  "Non-nil when the buffer holds a carriage return (widened; the answer is kept)."
  (when (eq diffusion-lsp--cr :unknown)
    (setq diffusion-lsp--cr (save-excursion
                              (save-restriction
                                (widen)
                                (goto-char (point-min))
                                (and (search-forward "\r" nil t) t)))))
  diffusion-lsp--cr)

(defun diffusion-lsp--cr-before-change (_beg _end)
  "Record whether the buffer holds a \\r before a change.
In `before-change-functions'.  In a buffer of a diffusion-lsp server
through lsp-mode, make lsp-mode send this change as the whole text when
it does (it reads `lsp-document-sync-method')."
  (when (diffusion-lsp--served-p)
    (setq diffusion-lsp--cr-before (diffusion-lsp--holds-cr))
    (when (bound-and-true-p lsp-mode)
      (cond (diffusion-lsp--cr-before
             (setq-local lsp-document-sync-method 1)     ; lsp--sync-full
             (setq diffusion-lsp--full-sync t))
            (diffusion-lsp--full-sync
             (kill-local-variable 'lsp-document-sync-method)
             (setq diffusion-lsp--full-sync nil))))))

(defun diffusion-lsp--cr-after-change (beg end pre-change-length)
  "Keep `diffusion-lsp--cr' true after a change of BEG to END.
PRE-CHANGE-LENGTH characters were replaced.  With eglot, a change made
while the buffer held a \\r (or one not recorded before it) is sent as
the whole text."
  (when (diffusion-lsp--served-p)
    (cond ((and (eq diffusion-lsp--cr t) (> pre-change-length 0))
           (setq diffusion-lsp--cr :unknown))    ; the \r may be gone: scan when next needed
          ((and (null diffusion-lsp--cr)
                (save-excursion (goto-char beg) (search-forward "\r" end t)))
           (setq diffusion-lsp--cr t)))
    (when (and diffusion-lsp--cr-before
               (bound-and-true-p eglot--managed-mode)
               (boundp 'eglot--recent-changes)
               (listp eglot--recent-changes))
      (setq eglot--recent-changes :emacs-messup))  ; eglot's own word for "send the whole text"
    (setq diffusion-lsp--cr-before :unknown)))

(defun diffusion-lsp--served-p ()
  "Non-nil in a buffer a diffusion-lsp server serves (through eglot or lsp-mode)."
  (or (and (bound-and-true-p eglot--managed-mode)
           (diffusion-lsp--eglot-server-p (eglot-current-server)))
      (and (bound-and-true-p lsp-mode)
           (cl-some #'diffusion-lsp--lsp-workspace-p (lsp-workspaces)))))

;; Positions are another matter: Emacs and the server number the lines below a lone \r
;; differently, so a suggestion, a draft or an action's edit would land on the wrong lines.  A
;; buffer holding one gets none of them, and the user is told once which line holds it.  (A \r
;; before \n is one break to both: served.)

(defvar-local diffusion-lsp--cr-told nil
  "Non-nil once the user was told why this buffer gets no suggestion.")

(defun diffusion-lsp--lone-cr-line ()
  "The line of the buffer's first \\r not followed by \\n (1-based), or nil."
  (when (diffusion-lsp--holds-cr)
    (save-excursion
      (save-restriction
        (widen)
        (goto-char (point-min))
        (when (re-search-forward "\r\\([^\n]\\|\\'\\)" nil t)
          (line-number-at-pos (match-beginning 0)))))))

(defun diffusion-lsp--cr-refusal ()
  "Why this buffer gets no suggestion, draft or action, or nil when it does."
  (let ((line (diffusion-lsp--lone-cr-line)))
    (if (null line)
        (setq diffusion-lsp--cr-told nil)
      (format (concat "diffusion-lsp: line %d holds a carriage return (^M) inside it: the server "
                      "counts it as a line break and Emacs does not, so its edits would land on "
                      "the wrong lines; no suggestion, draft or code action in %s until it is "
                      "removed (M-x replace-string RET C-q C-m RET RET)")
              line (buffer-name)))))

(defun diffusion-lsp--refused (&optional loud)
  "Non-nil when the current buffer holds a lone \\r; tell the user once.
With LOUD (a command the user ran), signal it as a `user-error' each time."
  (when-let ((why (diffusion-lsp--cr-refusal)))
    (cond (loud (user-error "%s" why))
          ((not diffusion-lsp--cr-told)
           (setq diffusion-lsp--cr-told t)
           (message "%s" why)))
    t))

(defun diffusion-lsp--edit-refusal (edit uri-to-path)
  "Why the WorkspaceEdit EDIT must not be applied, or nil.
It is refused when a buffer it edits holds a lone \\r.  URI-TO-PATH maps
its URIs to files."
  (let ((uris nil)
        (changes (diffusion-lsp--get edit "changes")))
    (mapc (lambda (change)
            (when-let ((document (diffusion-lsp--get change "textDocument")))
              (push (diffusion-lsp--get document "uri") uris)))
          (diffusion-lsp--get edit "documentChanges"))
    (cond ((hash-table-p changes)
           (maphash (lambda (uri _edits) (push uri uris)) changes))
          ((consp changes)                  ; a plist: keys are :URI keywords
           (cl-loop for (key _edits) on changes by #'cddr
                    do (push (if (keywordp key) (substring (symbol-name key) 1) key) uris))))
    (cl-some (lambda (uri)
               (when-let ((buffer (and (stringp uri) (find-buffer-visiting (funcall uri-to-path uri)))))
                 (with-current-buffer buffer
                   (diffusion-lsp--cr-refusal))))
             uris)))

(defun diffusion-lsp--cr-reverted ()
  "The buffer was reverted: whether it holds a \\r is not known."
  (setq diffusion-lsp--cr :unknown))

(defun diffusion-lsp--watch-cr ()
  "Keep the server's copy of buffers holding a \\r right (both clients' setup)."
  (add-hook 'before-change-functions #'diffusion-lsp--cr-before-change)
  (add-hook 'after-change-functions #'diffusion-lsp--cr-after-change)
  (add-hook 'after-revert-hook #'diffusion-lsp--cr-reverted))

;;;; eglot

(declare-function eglot-ensure "eglot")
(declare-function jsonrpc-running-p "jsonrpc")
(defvar eglot-server-programs)
(defvar eglot-workspace-configuration)

(defun diffusion-lsp--eglot-options (_server)
  "initializationOptions for eglot (no drafts: eglot does not paint them)."
  (or diffusion-lsp-settings (make-hash-table)))

;;;###autoload
(defun diffusion-lsp-eglot-setup ()
  "Use diffusion-lsp through eglot for `diffusion-lsp-major-modes'.
Eglot runs one server per major mode: this replaces the mode's usual server."
  (require 'eglot)
  (diffusion-lsp--watch-cr)
  (advice-add 'eglot-completion-at-point :around #'diffusion-lsp--eglot-completion)
  (advice-add 'eglot-code-actions :around #'diffusion-lsp--eglot-code-actions)
  (add-to-list 'eglot-server-programs
               `(,diffusion-lsp-major-modes
                 . (,@diffusion-lsp-command :initializationOptions diffusion-lsp--eglot-options)))
  (setq-default eglot-workspace-configuration
                (plist-put (copy-sequence (default-value 'eglot-workspace-configuration))
                           :diffusionLsp diffusion-lsp-settings)))

(defvar diffusion-lsp--eglot-servers nil
  "The eglot servers that sent `diffusion/status'.")

(declare-function eglot-current-server "eglot")
(declare-function eglot--uri-to-path "eglot")
(declare-function eglot--server-info "eglot")

(defun diffusion-lsp--eglot-server-p (server)
  "Non-nil when the eglot SERVER is a diffusion-lsp server."
  (and server
       (or (memq server diffusion-lsp--eglot-servers)
           (equal (plist-get (ignore-errors (eglot--server-info server)) :name) "diffusion-lsp"))))

(defun diffusion-lsp--eglot-completion (capf)
  "Around CAPF, `eglot-completion-at-point': nothing where a lone \\r is."
  (unless (and (diffusion-lsp--served-p) (diffusion-lsp--refused))
    (funcall capf)))

(defun diffusion-lsp--eglot-code-actions (code-actions beg &optional end action-kind interactive)
  "Around CODE-ACTIONS, `eglot-code-actions' of BEG END ACTION-KIND INTERACTIVE.
In a buffer holding a lone \\r: none, and a command says why."
  (if (and (diffusion-lsp--served-p) (diffusion-lsp--refused interactive))
      nil
    (funcall code-actions beg end action-kind interactive)))

(defun diffusion-lsp--eglot-managed ()
  "A buffer joined or left eglot: say \"stopped\" once no diffusion-lsp server runs.
Eglot turns its buffers off when a server exits (shut down, or died and not
reconnected), which runs this from `eglot-managed-mode-hook'."
  (when diffusion-lsp--eglot-servers
    (setq diffusion-lsp--eglot-servers
          (cl-remove-if-not #'jsonrpc-running-p diffusion-lsp--eglot-servers))
    (unless diffusion-lsp--eglot-servers
      (diffusion-lsp--status "stopped" (nth 1 diffusion-lsp-state) "The server stopped."))))

(with-eval-after-load 'eglot
  (add-hook 'eglot-managed-mode-hook #'diffusion-lsp--eglot-managed)
  (cl-defmethod eglot-handle-notification
    (server (_method (eql diffusion/status)) &key state model message &allow-other-keys)
    "Show the model state."
    (cl-pushnew server diffusion-lsp--eglot-servers)
    (diffusion-lsp--status state model message))
  (cl-defmethod eglot-handle-notification
    (_server (_method (eql diffusion/draft)) &rest _params)
    "Drafts are not painted with eglot; accept them quietly."
    nil)
  (cl-defmethod eglot-handle-request :around
    (server (_method (eql workspace/applyEdit)) &key edit &allow-other-keys)
    "Refuse a diffusion-lsp edit of a buffer holding a lone \\r.
It would land on other lines than the server meant."
    (let ((why (and (diffusion-lsp--eglot-server-p server)
                    (diffusion-lsp--edit-refusal edit #'eglot--uri-to-path))))
      (if (null why)
          (cl-call-next-method)
        (message "%s" why)
        `(:applied :json-false :failureReason ,why)))))

;;;; lsp-mode

(declare-function lsp-register-client "lsp-mode")
(declare-function make-lsp-client "lsp-mode")
(declare-function lsp-stdio-connection "lsp-mode")
(declare-function lsp--uri-to-path "lsp-mode")
(declare-function lsp--position-to-point "lsp-mode")
(declare-function lsp-inline-completion-display "lsp-inline-completion")
(declare-function lsp--client-server-id "lsp-mode")
(declare-function lsp--workspace-client "lsp-mode")
(declare-function lsp--workspace-buffers "lsp-mode")
(declare-function lsp--session-workspaces "lsp-mode")
(declare-function lsp-session "lsp-mode")
(defvar lsp--cur-version)

(defvar-local diffusion-lsp--draft-overlay nil
  "The overlay painting the draft of the suggestion in progress.")

(defun diffusion-lsp--clear-draft ()
  "Remove the draft overlay of the current buffer."
  (when (overlayp diffusion-lsp--draft-overlay)
    (delete-overlay diffusion-lsp--draft-overlay))
  (setq diffusion-lsp--draft-overlay nil))

(defun diffusion-lsp--draft-face (token)
  "The face of draft TOKEN by its confidence."
  (let ((text (diffusion-lsp--get token "text"))
        (confidence (or (diffusion-lsp--get token "confidence") 0)))
    (cond ((or (string-match-p "▒" text) (<= confidence 0)) 'diffusion-lsp-draft-masked)
          ((< confidence 0.4) 'diffusion-lsp-draft-low)
          ((< confidence 0.8) 'diffusion-lsp-draft-medium)
          (t 'diffusion-lsp-draft-high))))

(defun diffusion-lsp--draft-string (params)
  "The draft of PARAMS as a string, each token in its confidence face."
  (let ((tokens (diffusion-lsp--get params "tokens")))
    (if (and tokens (> (length tokens) 0))
        (mapconcat (lambda (token)
                     (propertize (diffusion-lsp--get token "text")
                                 'face (diffusion-lsp--draft-face token)))
                   tokens "")
      (propertize (or (diffusion-lsp--get params "text") "") 'face 'diffusion-lsp-draft-medium))))

(defun diffusion-lsp--lsp-mode-draft (_workspace params)
  "Paint the `diffusion/draft' PARAMS at the place the suggestion will go.
A draft made for another version of the buffer than lsp-mode's current
one is ignored: its range is on text the user has changed since (the
change itself cleared the drafts painted before it)."
  (when-let* ((path (lsp--uri-to-path (diffusion-lsp--get params "uri")))
              (buffer (find-buffer-visiting path))
              (current (with-current-buffer buffer
                         (let ((version (diffusion-lsp--get params "version")))
                           (or (null version) (equal version lsp--cur-version))))))
    (with-current-buffer buffer
      (diffusion-lsp--clear-draft)
      (unless (or (eq (diffusion-lsp--get params "done") t)
                  (diffusion-lsp--refused))          ; its range is in other lines than Emacs's
        (let* ((start (diffusion-lsp--get (diffusion-lsp--get params "range") "start"))
               (point (lsp--position-to-point start))
               (overlay (make-overlay point point nil t nil)))
          (overlay-put overlay 'after-string (diffusion-lsp--draft-string params))
          (overlay-put overlay 'priority 8000)
          (setq diffusion-lsp--draft-overlay overlay))))))

(declare-function lsp--apply-workspace-edit "lsp-mode")
(declare-function lsp-workspaces "lsp-mode")
(declare-function lsp--find-workspaces-for "lsp-mode")
(declare-function lsp--error "lsp-mode")

(defun diffusion-lsp--lsp-mode-apply-edit (_workspace params)
  "`workspace/applyEdit' with PARAMS, as lsp-mode does it.
An edit of a buffer holding a lone \\r is refused: it would land on other
lines than the server meant."
  (let* ((edit (diffusion-lsp--get params "edit"))
         (why (diffusion-lsp--edit-refusal edit #'lsp--uri-to-path)))
    (if why
        (progn (message "%s" why)
               (list :applied :json-false :failureReason why))
      (list :applied (condition-case err
                         (prog1 t (lsp--apply-workspace-edit edit 'server-requested))
                       (error (lsp--error "Failed to apply edits with message %s"
                                          (error-message-string err))
                              :json-false))))))

(defconst diffusion-lsp--positional-methods
  '("textDocument/completion" "completionItem/resolve" "textDocument/inlineCompletion"
    "textDocument/codeAction" "codeAction/resolve" "workspace/executeCommand")
  "Requests whose answer is placed by line numbers.")

(defun diffusion-lsp--lsp-mode-method (msg-or-method)
  "The method of MSG-OR-METHOD (a request or its method)."
  (if (stringp msg-or-method) msg-or-method (plist-get msg-or-method :method)))

(defun diffusion-lsp--lsp-mode-workspaces-for (find msg-or-method)
  "Around FIND, `lsp--find-workspaces-for' (and `lsp-feature?'), for MSG-OR-METHOD.
In a buffer holding a lone \\r, diffusion-lsp is not asked for what is placed
by line numbers; the other servers are."
  (let ((workspaces (funcall find msg-or-method)))
    (if (and (member (diffusion-lsp--lsp-mode-method msg-or-method) diffusion-lsp--positional-methods)
             (cl-some #'diffusion-lsp--lsp-workspace-p workspaces)
             (diffusion-lsp--refused))
        (cl-remove-if #'diffusion-lsp--lsp-workspace-p workspaces)
      workspaces)))

(defun diffusion-lsp--lsp-mode-send (body &rest _)
  "Before `lsp--send-request-async' of BODY: a request only diffusion-lsp would
answer, refused in a buffer holding a lone \\r, says why instead of lsp-mode's
\"does not support method\"."
  (when (and (member (plist-get body :method) diffusion-lsp--positional-methods)
             (null (lsp--find-workspaces-for body))
             (cl-some #'diffusion-lsp--lsp-workspace-p (lsp-workspaces)))
    (diffusion-lsp--refused t)))

(defun diffusion-lsp--lsp-mode-status (_workspace params)
  "Record the `diffusion/status' PARAMS."
  (diffusion-lsp--status (diffusion-lsp--get params "state")
                         (diffusion-lsp--get params "model")
                         (diffusion-lsp--get params "message")))

;;;###autoload
(defun diffusion-lsp-lsp-mode-setup ()
  "Register diffusion-lsp with lsp-mode as an add-on server.
It starts for `diffusion-lsp-major-modes', beside the mode's usual server."
  (require 'lsp-mode)
  (let ((handlers (make-hash-table :test 'equal))
        (requests (make-hash-table :test 'equal)))
    (puthash "diffusion/status" #'diffusion-lsp--lsp-mode-status handlers)
    (puthash "diffusion/draft" #'diffusion-lsp--lsp-mode-draft handlers)
    (puthash "workspace/applyEdit" #'diffusion-lsp--lsp-mode-apply-edit requests)
    (lsp-register-client
     (make-lsp-client
      :new-connection (lsp-stdio-connection (lambda () diffusion-lsp-command))
      :major-modes diffusion-lsp-major-modes
      :server-id 'diffusion-lsp
      :add-on? t
      :priority -1
      ;; lsp-mode before 9 counts columns in characters (code points) but announces no
      ;; position encoding, so the server read them as UTF-16: after an emoji on the line
      ;; its cursor and its edits were one column off per emoji.  The server knows UTF-32,
      ;; which is what lsp-mode counts (newer lsp-mode announces it, or negotiates).
      :custom-capabilities '((general . ((positionEncodings . ["utf-32"]))))
      :initialization-options (lambda () (diffusion-lsp--settings-with :drafts t))
      :notification-handlers handlers
      :request-handlers requests)))
  (advice-add 'lsp--find-workspaces-for :around #'diffusion-lsp--lsp-mode-workspaces-for)
  (advice-add 'lsp--send-request-async :before #'diffusion-lsp--lsp-mode-send)
  (add-hook 'lsp-inline-completion-shown-hook #'diffusion-lsp--clear-draft)
  (add-hook 'lsp-after-uninitialized-functions #'diffusion-lsp--lsp-mode-stopped)
  (add-hook 'after-change-functions #'diffusion-lsp--draft-stale)
  (diffusion-lsp--watch-cr))


(defun diffusion-lsp--lsp-workspace-p (workspace)
  "Non-nil when the lsp-mode WORKSPACE is a diffusion-lsp server's."
  (eq (lsp--client-server-id (lsp--workspace-client workspace)) 'diffusion-lsp))

(defun diffusion-lsp--lsp-mode-stopped (workspace)
  "WORKSPACE's server exited (shut down, crashed or killed).
If it is a diffusion-lsp server, clear the drafts it painted (no final draft
will come to clear them) and, when no diffusion-lsp server is left, show
\"stopped\" in the mode line instead of the last state it sent."
  (when (eq (lsp--client-server-id (lsp--workspace-client workspace)) 'diffusion-lsp)
    (dolist (buffer (lsp--workspace-buffers workspace))
      (when (buffer-live-p buffer)          ; not a virtual buffer (a plist): never painted
        (with-current-buffer buffer
          (diffusion-lsp--clear-draft))))
    (unless (cl-some (lambda (other)
                       (eq (lsp--client-server-id (lsp--workspace-client other)) 'diffusion-lsp))
                     (lsp--session-workspaces (lsp-session)))
      (diffusion-lsp--status "stopped" (nth 1 diffusion-lsp-state) "The server stopped."))))

(defun diffusion-lsp--draft-stale (&rest _)
  "The buffer changed: its draft belongs to an older version."
  (when diffusion-lsp--draft-overlay
    (diffusion-lsp--clear-draft)))

;;;###autoload
(defun diffusion-lsp-suggest ()
  "Show a diffusion suggestion at point (lsp-mode 9.0.1+ inline completion)."
  (interactive)
  (when (diffusion-lsp--served-p)
    (diffusion-lsp--refused t))
  (if (fboundp 'lsp-inline-completion-display)
      (lsp-inline-completion-display)
    (if (require 'lsp-inline-completion nil t)
        (lsp-inline-completion-display)
      (completion-at-point))))

(provide 'diffusion-lsp)
;;; diffusion-lsp.el ends here
