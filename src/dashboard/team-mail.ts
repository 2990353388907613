import type { Transporter } from 'nodemailer';
import type { Config } from '../config.js';

/** What the mailer logs with: a pino-like logger (the request's). */
export interface MailLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface LinkMail {
  kind: 'invite' | 'reset';
  to: string;
  /** The whole link, origin included. */
  url: string;
  business: string;
  /** The invited role (invitations). */
  role?: string;
  /** Who made the link. */
  from: string;
}

/** Every SMTP step waits at most this long: a dead mail server delays the page by seconds, not minutes. */
const TIMEOUT_MS = 10_000;

function compose(mail: LinkMail): { subject: string; text: string } {
  if (mail.kind === 'invite') {
    return {
      subject: `Invitation to ${mail.business}`,
      text: [
        `${mail.from} invited you to join ${mail.business} on the dashboard as ${mail.role ?? 'a member'}.`,
        '',
        'Open this link to choose your password and join:',
        mail.url,
        '',
        'The link works once and expires in 7 days. If you did not expect this invitation, ignore this email.',
      ].join('\n'),
    };
  }
  return {
    subject: `Password reset for ${mail.business}`,
    text: [
      `${mail.from} made a password reset link for your dashboard login ${mail.to} at ${mail.business}.`,
      '',
      'Open this link to choose a new password (your other sessions end):',
      mail.url,
      '',
      'The link works once and expires in 24 hours. If you did not ask for it, tell an owner of the business.',
    ].join('\n'),
  };
}

/**
 * Mails invitation and password reset links when SMTP is configured (SMTP_URL, SMTP_FROM). The
 * link is always shown to the person who made it too, so a mail that fails only loses a
 * convenience: `send` never throws, it logs the failure (without the link, the recipient or the
 * server's credentials) and answers false.
 */
export class TeamMailer {
  private transport: Transporter | undefined;

  constructor(
    private readonly url: string,
    private readonly sender: string,
  ) {}

  /** Made at the first message: nodemailer is loaded only by a process that mails. */
  private async open(): Promise<Transporter> {
    if (this.transport) return this.transport;
    const { createTransport } = await import('nodemailer');
    // One connection per message (no pool): nothing to close at shutdown, nothing kept open.
    this.transport = createTransport({
      url: this.url,
      connectionTimeout: TIMEOUT_MS,
      greetingTimeout: TIMEOUT_MS,
      socketTimeout: TIMEOUT_MS,
      logger: false,
      debug: false,
    });
    return this.transport;
  }

  async send(mail: LinkMail, log: MailLog): Promise<boolean> {
    const { subject, text } = compose(mail);
    try {
      await (await this.open()).sendMail({ from: this.sender, to: mail.to, subject, text });
      log.info({ mail: mail.kind }, 'dashboard link mailed');
      return true;
    } catch (err) {
      const e = err as { code?: unknown; responseCode?: unknown; command?: unknown; message?: unknown };
      // The server's answer can quote what it was sent: keep only the link-free, address-free parts.
      const token = mail.url.slice(mail.url.lastIndexOf('/') + 1);
      const reason = String(e.message ?? err)
        .split(mail.url)
        .join('[link]')
        .split(token)
        .join('[link]')
        .split(mail.to)
        .join('[recipient]')
        .slice(0, 300);
      log.warn(
        { mail: mail.kind, code: e.code, responseCode: e.responseCode, command: e.command, reason },
        'dashboard link not mailed (it was shown to the person who made it)',
      );
      return false;
    }
  }
}

/** The mailer of this configuration, or null when SMTP is not configured. */
export function teamMailer(config: Pick<Config, 'SMTP_URL' | 'SMTP_FROM'>): TeamMailer | null {
  return config.SMTP_URL && config.SMTP_FROM ? new TeamMailer(config.SMTP_URL, config.SMTP_FROM) : null;
}
